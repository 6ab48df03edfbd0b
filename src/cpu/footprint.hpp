// How much host memory a CPU-backend call touches — its buffers and its own scratch — checked
// before it reads any input or allocates anything: a call that could never fit (n = k = 2^30) is
// refused at once with the sizes, instead of failing after seconds and gigabytes, or reading far
// past buffers that could not have been that large.
#pragma once

#include <cstddef>
#include <initializer_list>
#include <string>
#include <string_view>

namespace metrale::cpu {

// One region of a call's footprint: a caller's buffer or the backend's scratch. Bytes are a
// double so products of int32 dimensions never overflow (exactness does not matter at this scale).
struct MemoryPart {
  std::string_view name;
  double bytes;
};

// The host's physical memory in bytes (the limit the footprint is held against).
double host_memory_bytes();

// "1.50 GiB": bytes in the largest binary unit that keeps the number >= 1.
std::string format_bytes(double bytes);

// Throws invalid_argument when the parts together exceed the host's memory: "`shape` need X of
// host memory (name X, ...), more than this machine's Y".
void require_host_memory(std::string_view shape, std::initializer_list<MemoryPart> parts);

}  // namespace metrale::cpu
