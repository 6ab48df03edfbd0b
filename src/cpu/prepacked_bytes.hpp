// Host bytes in and out of the prepacked weight layout (format/prepack.hpp), which moves bits
// within each 16-bit little-endian half of a row's packed bytes. A half is read a byte at a time,
// so any alignment works, and it is read before it is written, so src == dst works in place.
// Shared by prepack_nvfp4 and the GEMM decode of prepacked weights.
#pragma once

#include <cstddef>
#include <cstdint>

#include "format/prepack.hpp"

namespace metrale::cpu {

// dst's first `halves` halves = convert of src's: format::prepack_half or format::unprepack_half.
inline void convert_halves(const std::uint8_t* src, std::uint8_t* dst, std::size_t halves,
                           std::uint16_t (*convert)(std::uint16_t)) {
  for (std::size_t h = 0; h < halves; ++h) {
    const auto half = static_cast<std::uint16_t>(src[2 * h] | src[2 * h + 1] << 8);
    const std::uint16_t out = convert(half);
    dst[2 * h] = static_cast<std::uint8_t>(out & 0xFFu);
    dst[2 * h + 1] = static_cast<std::uint8_t>(out >> 8);
  }
}

}  // namespace metrale::cpu
