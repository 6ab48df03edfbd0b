// CPU GEMM core: bf16 and NVFP4 weight decoding to fp32 (NVFP4 in the seeds' packed layout or
// prepacked), a panel of rows at a time, and the one row-times-weightᵀ routine (fp64
// accumulation, bf16 round-to-nearest-even out) behind every GEMM of the CPU backend. Host
// memory; threads over weight panels, each with its own panel buffer.
#include "cpu/gemm_core.hpp"

#include <algorithm>
#include <array>
#include <vector>

#include "core/config.hpp"
#include "cpu/parallel.hpp"
#include "format/bf16.hpp"
#include "format/e2m1.hpp"
#include "format/e4m3.hpp"
#include "format/fragment_order.hpp"
#include "format/layouts.hpp"
#include "format/prepack.hpp"

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

constexpr std::size_t kTileRows = 32;    // rows of `a` per pass over a panel (cache reuse)
constexpr std::size_t kBlockRows = 256;  // rows of `a` per work item

}  // namespace

void bf16_to_float(const bf16_bits* src, std::size_t count, float* dst) {
  parallel_for(count, std::size_t{1} << 16, [&](std::size_t begin, std::size_t end) {
    for (std::size_t i = begin; i < end; ++i) dst[i] = format::bf16_to_float(src[i]);
  });
}

DecodeRows bf16_rows(const bf16_bits* weight, std::int32_t k) {
  const std::size_t K = static_cast<std::size_t>(k);
  return [weight, K](std::size_t first, std::size_t count, float* dst) {
    const bf16_bits* src = weight + first * K;
    for (std::size_t i = 0; i < count * K; ++i) dst[i] = format::bf16_to_float(src[i]);
  };
}

DecodeRows nvfp4_rows(const std::uint8_t* packed, const std::uint8_t* scale, ScaleLayout layout,
                      WeightLayout weights, std::int32_t n, std::int32_t k) {
  const std::size_t N = static_cast<std::size_t>(n), K = static_cast<std::size_t>(k);
  // Prepacked weights in the fragment order move codes between a group's halves: a row is
  // converted back to the seeds' layout whole, then decoded as packed weights.
  const bool fragments = weights == WeightLayout::prepacked &&
                         core::prepacked_layout() == core::PrepackedLayout::fragments;
  const bool halves = weights == WeightLayout::prepacked && !fragments;
  return [=](std::size_t first, std::size_t count, float* dst) {
    const auto& pairs = e2m1_pair_table();
    std::uint8_t seeds[8];  // a prepacked block's bytes in the seeds' layout
    std::vector<std::uint8_t> row_seeds(fragments ? K / 2 : 0);
    for (std::size_t row = first; row < first + count; ++row) {
      const std::uint8_t* row_bytes = packed + format::packed_nk_offset(row, 0, K);
      if (fragments) {
        format::convert_fragment_row<false>(row_bytes, row_seeds.data(), K);
        row_bytes = row_seeds.data();
      }
      for (std::size_t b = 0; b < K / 16; ++b) {
        const std::size_t at = layout == ScaleLayout::sfb ? format::sfb_offset(row, b, K)
                                                          : format::k16_by_n_offset(row, b, N);
        const float sf = format::e4m3_to_float(scale[at]);
        const std::uint8_t* bytes = row_bytes + b * 8;
        if (halves) {
          // A block is four halves.
          format::convert_halves(bytes, seeds, 4, format::unprepack_half);
          bytes = seeds;
        }
        float* out = dst + (row - first) * K + b * 16;
        for (int j = 0; j < 8; ++j) {
          out[2 * j] = pairs[bytes[j]][0] * sf;
          out[2 * j + 1] = pairs[bytes[j]][1] * sf;
        }
      }
    }
  };
}

double panel_scratch_bytes(std::int32_t k) {
  return static_cast<double>(worker_count()) * kPanelRows * static_cast<double>(k) * sizeof(float);
}

void gemm_rows(const float* a, std::int32_t rows, const DecodeRows& w, std::int32_t n,
               std::int32_t k, float scale_2, bf16_bits* out) {
  const std::size_t M = static_cast<std::size_t>(rows), N = static_cast<std::size_t>(n),
                    K = static_cast<std::size_t>(k);
  // Work items: a panel of weight rows × a block of a's rows, so tall, narrow products spread
  // over the workers too; a panel is decoded again per block (1/kBlockRows of the work).
  const std::size_t panels = (N + kPanelRows - 1) / kPanelRows;
  const std::size_t blocks = (M + kBlockRows - 1) / kBlockRows;
  // About four chunks per worker balance the load; each chunk allocates its panel buffer once.
  const std::size_t items = panels * blocks;
  const std::size_t grain = std::max<std::size_t>(1, items / (4 * std::size_t{worker_count()}));
  parallel_for(items, grain, [&](std::size_t begin, std::size_t end) {
    std::vector<float> panel(kPanelRows * K);  // this chunk's decoded weight rows
    for (std::size_t item = begin; item < end; ++item) {
      const std::size_t p = item / blocks, block = item % blocks;
      const std::size_t c0 = p * kPanelRows, count = std::min(kPanelRows, N - c0);
      w(c0, count, panel.data());
      const std::size_t r_end = std::min((block + 1) * kBlockRows, M);
      for (std::size_t r0 = block * kBlockRows; r0 < r_end; r0 += kTileRows) {
        for (std::size_t c = 0; c < count; ++c) {
          for (std::size_t r = r0; r < std::min(r0 + kTileRows, r_end); ++r) {
            const float acc = static_cast<float>(dot(a + r * K, panel.data() + c * K, k));
            out[r * N + c0 + c] = format::float_to_bf16(acc * scale_2);
          }
        }
      }
    }
  });
}

}  // namespace metrale::cpu::detail
