// Host-memory footprint checks of the CPU backend (footprint.hpp).
#include "cpu/footprint.hpp"

#include <unistd.h>

#include <fmt/format.h>

#include "core/error.hpp"

namespace metrale::cpu {

double host_memory_bytes() {
  const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
  // Unknown (a sandbox that hides it): do not refuse on a guess; allocation failures still report.
  if (pages <= 0 || page <= 0) return 1e30;
  return static_cast<double>(pages) * static_cast<double>(page);
}

std::string format_bytes(double bytes) {
  static constexpr const char* kUnits[] = {"bytes", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB", "ZiB"};
  int unit = 0;
  while (bytes >= 1024.0 && unit + 1 < static_cast<int>(std::size(kUnits))) {
    bytes /= 1024.0;
    ++unit;
  }
  return unit == 0 ? fmt::format("{:.0f} bytes", bytes) : fmt::format("{:.2f} {}", bytes, kUnits[unit]);
}

void require_host_memory(std::string_view shape, std::initializer_list<MemoryPart> parts) {
  double total = 0.0;
  for (const MemoryPart& part : parts) total += part.bytes;
  const double limit = host_memory_bytes();
  if (total <= limit) return;
  std::string detail;
  for (const MemoryPart& part : parts) {
    if (!detail.empty()) detail += ", ";
    detail += fmt::format("{} {}", part.name, format_bytes(part.bytes));
  }
  fail(Status::invalid_argument,
       "{} need {} of host memory ({}), more than this machine's {}: the CPU backend cannot run "
       "it",
       shape, format_bytes(total), detail, format_bytes(limit));
}

}  // namespace metrale::cpu
