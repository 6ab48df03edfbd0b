// CPU GEMM core: bf16 and NVFP4 weight decoding to fp32 and the one row-times-weightᵀ routine
// (fp64 accumulation, bf16 round-to-nearest-even out) behind every GEMM of the CPU backend.
// Host memory; threads over output tiles.
#include "cpu/gemm_core.hpp"

#include <algorithm>
#include <array>

#include "cpu/parallel.hpp"
#include "format/bf16.hpp"
#include "format/e2m1.hpp"
#include "format/e4m3.hpp"
#include "format/layouts.hpp"

namespace metrale::cpu::detail {
namespace {

// Both e2m1 values of every packed byte: [byte][0] is the low nibble (even k).
const std::array<std::array<float, 2>, 256>& e2m1_pair_table() {
  static const auto table = [] {
    std::array<std::array<float, 2>, 256> pairs{};
    for (int byte = 0; byte < 256; ++byte) {
      pairs[byte][0] = format::e2m1_to_float(static_cast<std::uint8_t>(byte & 0xF));
      pairs[byte][1] = format::e2m1_to_float(static_cast<std::uint8_t>(byte >> 4));
    }
    return pairs;
  }();
  return table;
}

// The sequential fp64 dot product: every product of a bf16 and an (e2m1 × e4m3) or bf16 value is
// exact in double; only the running sum rounds, in ascending k.
double dot(const float* a, const float* w, std::int32_t k) {
  double sum = 0.0;
  for (std::int32_t i = 0; i < k; ++i) sum += static_cast<double>(a[i]) * static_cast<double>(w[i]);
  return sum;
}

constexpr std::size_t kTileRows = 32;  // rows of `a` per work item, reused against each w row
constexpr std::size_t kTileCols = 8;   // w rows per work item

}  // namespace

void bf16_to_float(const bf16_bits* src, std::size_t count, float* dst) {
  parallel_for(count, std::size_t{1} << 16, [&](std::size_t begin, std::size_t end) {
    for (std::size_t i = begin; i < end; ++i) dst[i] = format::bf16_to_float(src[i]);
  });
}

void decode_nvfp4_weight(const std::uint8_t* packed, const std::uint8_t* scale, ScaleLayout layout,
                         std::int32_t n, std::int32_t k, float* w) {
  const auto& pairs = e2m1_pair_table();
  const std::size_t N = static_cast<std::size_t>(n), K = static_cast<std::size_t>(k);
  parallel_for(N, 16, [&](std::size_t begin, std::size_t end) {
    for (std::size_t row = begin; row < end; ++row) {
      for (std::size_t b = 0; b < K / 16; ++b) {
        const std::size_t at = layout == ScaleLayout::sfb ? format::sfb_offset(row, b, K)
                                                          : format::k16_by_n_offset(row, b, N);
        const float sf = format::e4m3_to_float(scale[at]);
        const std::uint8_t* bytes = packed + format::packed_nk_offset(row, b * 8, K);
        float* out = w + row * K + b * 16;
        for (int j = 0; j < 8; ++j) {
          out[2 * j] = pairs[bytes[j]][0] * sf;
          out[2 * j + 1] = pairs[bytes[j]][1] * sf;
        }
      }
    }
  });
}

void gemm_rows(const float* a, std::int32_t rows, const float* w, std::int32_t n, std::int32_t k,
               float scale_2, bf16_bits* out) {
  const std::size_t M = static_cast<std::size_t>(rows), N = static_cast<std::size_t>(n),
                    K = static_cast<std::size_t>(k);
  const std::size_t row_tiles = (M + kTileRows - 1) / kTileRows;
  const std::size_t col_tiles = (N + kTileCols - 1) / kTileCols;
  parallel_for(row_tiles * col_tiles, 1, [&](std::size_t begin, std::size_t end) {
    for (std::size_t tile = begin; tile < end; ++tile) {
      const std::size_t r0 = tile / col_tiles * kTileRows, c0 = tile % col_tiles * kTileCols;
      for (std::size_t c = c0; c < std::min(c0 + kTileCols, N); ++c) {
        for (std::size_t r = r0; r < std::min(r0 + kTileRows, M); ++r) {
          const float acc = static_cast<float>(dot(a + r * K, w + c * K, k));
          out[r * N + c] = format::float_to_bf16(acc * scale_2);
        }
      }
    }
  });
}

}  // namespace metrale::cpu::detail
