// Guard bands of the harness's buffers (device: buffers.hpp; host: HostBuffer below): bytes of a
// known, position-dependent pattern on both sides of the data, checked after every run, so that a
// write past either end is caught whatever value it writes (0, NaN, the poison).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace metrale::check {

inline constexpr std::size_t kGuardBytes = 256;  // keeps the data 256-byte aligned

inline std::uint8_t guard_byte(std::size_t i) {
  return static_cast<std::uint8_t>(0xA5u ^ (i * 29u));
}

// "" when both bands hold the pattern, else which byte of buffer `name` changed first.
std::string guard_problem(std::string_view name, std::span<const std::uint8_t> before,
                          std::span<const std::uint8_t> after);

// A host buffer framed by guard bands: the outputs of a case run on the CPU backend.
class HostBuffer {
 public:
  HostBuffer(std::size_t bytes, std::string name);
  void* data() { return storage_.data() + kGuardBytes; }
  const void* data() const { return storage_.data() + kGuardBytes; }
  template <class T>
  T* as() {
    return static_cast<T*>(data());
  }
  template <class T>
  std::vector<T> values() const {
    const auto* first = static_cast<const T*>(data());
    return std::vector<T>(first, first + size_ / sizeof(T));
  }
  void poison_bytes(std::uint8_t value);
  template <class T>
  void fill(T value) {
    std::fill_n(as<T>(), size_ / sizeof(T), value);
  }
  std::string check_guards() const;

 private:
  std::vector<std::uint8_t> storage_;
  std::size_t size_ = 0;
  std::string name_;
};

}  // namespace metrale::check
