// Names of statuses and backends, shared by the C ABI, the C++ API and the CLI.
#pragma once

#include <cstdint>

#include "metrale/metrale.hpp"

namespace metrale::core {

// "ok", "invalid_argument", ...; "unknown_status" for a value outside the enum.
const char* status_name(std::int32_t status);

// True when `value` is one of the Backend enumerators.
bool is_backend(std::int32_t value);

}  // namespace metrale::core
