// A host emulation of the lean quantize kernel's tile walk (src/cuda/pack/quantize_lean.cu) held
// against the CPU quantizer: every tile of the tensor, every warp and lane of the CTA, through the
// kernel's own host-device steps (lean_tile.hpp, search_codes.hpp, scale_table.hpp); what the
// emulation writes itself is the CUDA glue between them: the stage's zero fill for rows outside
// the tensor, the partner lane's shuffle, the tile's scale buffer and its stores (as
// quantize_tile.cuh's store_tile_scales). Shapes with partial row and column tiles, both forms;
// NaN and Inf among the weights in the seeds' form (the form that quantizes before it refuses),
// the index the kernel reports. Outputs start poisoned, so an unwritten byte fails as a wrong one.
// The tile order (the TileCursor walk) is the proven kernel's, shared, and not emulated here.
#include "cuda/pack/lean_tile.hpp"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

#include <gtest/gtest.h>

#include "check/inputs.hpp"
#include "check/weights.hpp"
#include "cuda/pack/scale_table.hpp"

namespace metrale::cuda_test {
namespace {

using cuda::kRowsPerWarp;
using cuda::kTileBlocks;
using cuda::kTileCols;
using cuda::kTileRows;

constexpr unsigned long long kNoIndex = ~0ull;
constexpr std::uint8_t kPoison = 0xA5;

struct Outputs {
  std::vector<std::uint8_t> packed, scale;
  unsigned long long first_bad = kNoIndex;
};

// One lane's state in a tile.
struct Lane {
  cuda::pack::LeanRows rows;
  std::uint32_t words[kRowsPerWarp][4];
  std::uint32_t rows01, rows23, mine;
};

struct Tables {
  std::uint32_t base;
  std::vector<std::uint8_t> scales;
  std::vector<cuda::pack::CodeConstants> codes;
  float scale_2;
  bool any_divide;  // the kernel's CTA-uniform test: some block's scale byte may need the division
};

Tables tables_for(const std::vector<bf16_bits>& w, bool computed) {
  std::uint32_t amax = 0;  // the scan's max magnitude (finite weights in the computed form)
  for (bf16_bits x : w) amax = std::max<std::uint32_t>(amax, x & 0x7FFFu);
  Tables t{};
  t.scale_2 =
      computed ? format::scale_2_from_amax(format::bf16_to_float(static_cast<std::uint16_t>(amax)))
               : 1.0f;
  t.base = cuda::pack::scale_table_base(cuda::pack::scale_table_top(computed, amax));
  for (std::uint32_t i = 0; i < cuda::pack::kScaleTableBytes; ++i)
    t.scales.push_back(cuda::pack::scale_table_entry(t.base, i, t.scale_2));
  for (int sf = 0; sf < cuda::pack::kScaleBytes; ++sf) {
    t.codes.push_back(cuda::pack::code_constants(static_cast<std::uint8_t>(sf), t.scale_2));
    t.any_divide = t.any_divide || cuda::pack::divides_a_block(sf, t.codes.back());
  }
  return t;
}

std::uint32_t block_scale(const Tables& t, std::uint32_t amax_bits) {
  const std::uint32_t at = cuda::pack::scale_table_index(amax_bits, t.base);
  if (at < cuda::pack::kScaleTableBytes) return t.scales[at];
  return format::block_scale_e4m3(format::bf16_to_float(static_cast<std::uint16_t>(amax_bits)),
                                  t.scale_2);
}

// The stage: the lane's rows inside the tensor copied, the others zero.
void stage(const std::vector<bf16_bits>& w, std::int64_t k, Lane& l) {
  for (int j = 0; j < kRowsPerWarp; ++j) {
    std::memset(l.words[j], 0, sizeof l.words[j]);
    if (j < l.rows.rows) std::memcpy(l.words[j], &w[l.rows.first + j * k], sizeof l.words[j]);
  }
}

void first_non_finite(const Lane& l, std::int64_t k, Outputs& out) {
  for (int j = 0; j < kRowsPerWarp; ++j) {
    const int e = cuda::pack::first_non_finite(l.words[j]);
    if (e >= 0) {
      out.first_bad = std::min<unsigned long long>(out.first_bad, l.rows.first + j * k + e);
      return;
    }
  }
}

void warp_step(const std::vector<bf16_bits>& w, std::int64_t n, std::int64_t k, std::int64_t row0,
               std::int64_t col0, int warp, const Tables& t,
               std::uint8_t (&tile_scales)[kTileBlocks][kTileRows], Outputs& out) {
  Lane lanes[32];
  for (int lane = 0; lane < 32; ++lane) {
    Lane& l = lanes[lane];
    l.rows = cuda::pack::lean_rows(n, k, row0, col0, warp, lane);
    stage(w, k, l);
    l.rows01 = cuda::pack::paired_half_maxima(l.words[0], l.words[1]);
    l.rows23 = cuda::pack::paired_half_maxima(l.words[2], l.words[3]);
    if (cuda::pack::any_non_finite(cuda::pack::max_lanes(l.rows01, l.rows23)))
      first_non_finite(l, k, out);
  }
  for (int lane = 0; lane < 32; ++lane) {  // the shuffle of halves, then the lookups
    Lane& l = lanes[lane];
    const Lane& partner = lanes[lane ^ 1];
    const int my_rows = cuda::pack::scaled_rows(lane);
    const std::uint32_t block_max =
        cuda::pack::max_lanes(cuda::pack::halves_kept(my_rows, l.rows01, l.rows23),
                              cuda::pack::halves_for_partner(cuda::pack::scaled_rows(lane ^ 1),
                                                             partner.rows01, partner.rows23));
    l.mine = block_scale(t, block_max & 0xFFFFu) | block_scale(t, block_max >> 16) << 8;
  }
  for (int lane = 0; lane < 32; ++lane) {  // the shuffle of scales, the scale and code stores
    const Lane& l = lanes[lane];
    const int my_rows = cuda::pack::scaled_rows(lane);
    tile_scales[lane / 2][kRowsPerWarp * warp + my_rows] = static_cast<std::uint8_t>(l.mine);
    tile_scales[lane / 2][kRowsPerWarp * warp + my_rows + 1] =
        static_cast<std::uint8_t>(l.mine >> 8);
    for (int j = 0; j < kRowsPerWarp; ++j) {
      const std::uint32_t sf = cuda::pack::row_scale(j, my_rows, l.mine, lanes[lane ^ 1].mine);
      const cuda::pack::CodeConstants& c = t.codes[sf];
      // The kernel's code_rows<kDivide>: a row's division tested only when any_divide.
      const std::uint32_t packed =
          t.any_divide && c.divide
              ? cuda::pack::pack_four_words(l.words[j], c, static_cast<std::uint8_t>(sf), t.scale_2)
              : cuda::pack::search_codes_of_row(l.words[j], c);
      if (j < l.rows.rows) std::memcpy(&out.packed[(l.rows.first + j * k) / 2], &packed, 4);
    }
  }
}

Outputs emulate(const std::vector<bf16_bits>& w, std::int64_t n, std::int64_t k, bool computed) {
  const Tables t = tables_for(w, computed);
  Outputs out{std::vector<std::uint8_t>(n * k / 2, kPoison),
              std::vector<std::uint8_t>(n * k / 16, kPoison)};
  for (std::int64_t row0 = 0; row0 < n; row0 += kTileRows) {
    for (std::int64_t col0 = 0; col0 < k; col0 += kTileCols) {
      std::uint8_t tile_scales[kTileBlocks][kTileRows];
      std::memset(tile_scales, kPoison, sizeof tile_scales);
      for (int warp = 0; warp < kTileRows / kRowsPerWarp; ++warp)
        warp_step(w, n, k, row0, col0, warp, t, tile_scales, out);
      for (int b = 0; b < kTileBlocks; ++b)
        for (int r = 0; r < kTileRows; ++r) {
          const std::int64_t sn = row0 + r, sb = col0 / 16 + b;
          if (sn < n && sb < k / 16) out.scale[sb * n + sn] = tile_scales[b][r];
        }
    }
  }
  return out;
}

struct Shape {
  int n, k;
};
// Partial row tiles (N % 32), partial column tiles (K % 256), N % 4 != 0, one block, many tiles.
constexpr Shape kShapes[] = {{1, 16},   {5, 48},  {8, 64},     {33, 272},
                             {63, 528}, {65, 96}, {129, 2048}, {200, 784}};

// Weights of bf16 subnormal magnitudes 0 to 3 (2^-133 units): with scale_2 computed, the smallest
// scale bytes' d underflows to 0, and the kernel takes its dividing copy of the codes.
std::vector<bf16_bits> tiny_bf16(std::size_t count, std::uint64_t seed) {
  std::vector<bf16_bits> w = check::normal_bf16(count, seed, 1.0f);
  for (bf16_bits& x : w) x &= 0x8003u;
  return w;
}

TEST(LeanTile, EmulatedWalkEqualsTheCpuQuantizer) {
  for (const Shape s : kShapes) {
    for (bool computed : {true, false}) {
      const std::vector<bf16_bits> inputs[] = {
          check::pack_stress_bf16(s.n, s.k, 7 + s.n, !computed),
          check::normal_bf16(std::size_t(s.n) * s.k, 11 + s.k, 0.02f),
          tiny_bf16(std::size_t(s.n) * s.k, 13 + s.n)};
      for (const std::vector<bf16_bits>& w : inputs) {
        SCOPED_TRACE(testing::Message()
                     << s.n << " x " << s.k << ", scale_2 " << (computed ? "computed" : "= 1"));
        const check::PackedWeight want = check::pack_weight_cpu(w, s.n, s.k, computed, false);
        const Outputs got = emulate(w, s.n, s.k, computed);
        ASSERT_EQ(got.packed, want.packed);
        ASSERT_EQ(got.scale, want.scale);
        EXPECT_EQ(got.first_bad, kNoIndex);
      }
    }
  }
}

// Scale byte 0 has d = 0 at every scale_2 but scales no block, so the kernel's any_divide leaves it
// out: counted, every tile took the dividing copy of the codes. Checked over every bf16 block amax
// at the seeds' scale_2 and the recipe's of tensor amaxes in every third binade (bf16 subnormals
// to the largest finite); any_divide is false but for the smallest tensor amaxes (byte 1's d
// underflows), which the walk above quantizes (tiny_bf16).
TEST(LeanTile, AnyDivideLeavesOutScaleByteZeroWhichNoBlockHas) {
  std::vector<std::uint32_t> tensor_amaxes;
  for (std::uint32_t binade = 0; binade < 0xFF; binade += 3)
    for (std::uint32_t mantissa : {0u, 1u, 0x35u, 0x7Fu})
      tensor_amaxes.push_back(binade << 7 | mantissa);
  tensor_amaxes.push_back(0x7F7Fu);
  auto check = [](bool computed, std::uint32_t tensor_amax) {
    const Tables t = tables_for({static_cast<bf16_bits>(tensor_amax)}, computed);
    SCOPED_TRACE(testing::Message() << std::hex << "tensor amax 0x" << tensor_amax << ", computed "
                                    << computed << ", scale_2 " << t.scale_2);
    EXPECT_NE(t.codes[0].divide, 0u);
    EXPECT_FALSE(cuda::pack::divides_a_block(0, t.codes[0]));
    for (std::uint32_t amax = 0; amax <= 0x7FFFu; ++amax)
      ASSERT_NE(format::block_scale_e4m3(format::bf16_to_float(static_cast<std::uint16_t>(amax)),
                                         t.scale_2),
                0)
          << std::hex << "block amax 0x" << amax;
    // Only tensor amaxes 1 to 10 in 2^-133 units (bf16 subnormals) give a byte past 0 whose d
    // underflows (a sweep of every finite bf16 tensor amax, 2026-12-05).
    EXPECT_EQ(t.any_divide, computed && tensor_amax >= 1 && tensor_amax <= 10);
  };
  for (std::uint32_t tensor_amax : tensor_amaxes) check(true, tensor_amax);
  check(false, 0);
}

// NaN and ±Inf (the seeds' form quantizes them, then refuses the weight): the lowest index.
TEST(LeanTile, EmulatedWalkFindsTheLowestNonFiniteIndex) {
  for (const Shape s : kShapes) {
    std::vector<bf16_bits> w = check::normal_bf16(std::size_t(s.n) * s.k, 5, 1.0f);
    const std::size_t last = w.size() - 1;
    for (std::size_t bad : {last, last / 2 + 3, std::size_t{0}}) {
      w[bad] = bad % 3 == 0 ? 0x7FC0 : bad % 3 == 1 ? 0x7F80 : 0xFF80;  // NaN, +Inf, -Inf
      EXPECT_EQ(emulate(w, s.n, s.k, false).first_bad, bad) << s.n << " x " << s.k;
    }
  }
}

}  // namespace
}  // namespace metrale::cuda_test
