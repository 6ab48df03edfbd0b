// Guard bands and the guarded host buffer (guard.hpp).
#include "check/guard.hpp"

#include <algorithm>
#include <utility>

#include <fmt/format.h>

namespace metrale::check {

std::string guard_problem(std::string_view name, std::span<const std::uint8_t> before,
                          std::span<const std::uint8_t> after) {
  for (std::size_t i = 0; i < kGuardBytes; ++i) {
    if (before[i] != guard_byte(i)) {
      return fmt::format("{}: guard band before the data overwritten at byte -{} (0x{:02x})", name,
                         kGuardBytes - i, before[i]);
    }
    if (after[i] != guard_byte(i)) {
      return fmt::format(
          "{}: guard band after the data overwritten at byte {} past the end "
          "(0x{:02x})",
          name, i, after[i]);
    }
  }
  return {};
}

HostBuffer::HostBuffer(std::size_t bytes, std::string name)
    : storage_(bytes + 2 * kGuardBytes), size_(bytes), name_(std::move(name)) {
  for (std::size_t i = 0; i < kGuardBytes; ++i) {
    storage_[i] = guard_byte(i);
    storage_[kGuardBytes + size_ + i] = guard_byte(i);
  }
}

void HostBuffer::poison_bytes(std::uint8_t value) {
  std::fill_n(storage_.begin() + static_cast<std::ptrdiff_t>(kGuardBytes), size_, value);
}

std::string HostBuffer::check_guards() const {
  const std::span<const std::uint8_t> all(storage_);
  return guard_problem(name_, all.first(kGuardBytes),
                       all.subspan(kGuardBytes + size_, kGuardBytes));
}

}  // namespace metrale::check
