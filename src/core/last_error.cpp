// Thread-local storage for the last error message of the C ABI (see last_error.hpp).
#include "core/last_error.hpp"

#include <string>

namespace metrale::core {
namespace {

std::string& slot() {
  thread_local std::string message;
  return message;
}

}  // namespace

void set_last_error(std::string_view message) {
  try {
    slot().assign(message);
  } catch (...) {
    // Out of memory while recording an error: keep what fits rather than throwing across the ABI.
    slot().clear();
  }
}

void clear_last_error() {
  slot().clear();
}

const char* last_error() {
  return slot().c_str();
}

}  // namespace metrale::core
