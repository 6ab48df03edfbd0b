// Checks every CUDA entry point makes before touching the device: a usable device (the cached
// answer of metrale::cuda::available) and the 16-byte pointer alignment our kernels assume.
// Both throw metrale::Error with Status::unsupported and a message naming the function, the
// value and the expectation. Defined in device.cpp (host code: the messages are built with fmt,
// which .cu files cannot include), so .cu launchers only call them.
#pragma once

#include <cstddef>
#include <string_view>

namespace metrale::cuda {

inline constexpr std::size_t kPointerAlignment = 16;  // 16-byte vector loads and stores

void require_device(std::string_view who);
void require_aligned_16(std::string_view who, std::string_view name, const void* ptr);

}  // namespace metrale::cuda
