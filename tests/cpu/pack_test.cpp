// Tests of cpu::pack_nvfp4 (pack_bf16_weight_to_nvfp4_t on the CPU): golden blocks worked out by
// hand from NVFP4.md §4 (an all-zero block, a max-magnitude block, scales clamped at 2^-9 and at
// 448, exact e2m1 and e4m3 ties, a tie a reciprocal gets wrong), the output layouts (even k in
// the low nibble, scales [K/16, N]), exact round trips on grid values, and agreement with a naive
// re-derivation of the recipe on random weights.
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "cpu/cpu_backend.hpp"
#include "cpu/cpu_test_util.hpp"
#include "format/bf16.hpp"
#include "format/e2m1.hpp"
#include "format/e4m3.hpp"
#include "format/float_sweep.hpp"

namespace metrale::cpu {
namespace {

struct Packed {
  std::vector<std::uint8_t> packed, scale;
  float scale_2 = -1.0f;
};

// Runs the CPU quantizer on float values (each must be bf16-exact); `recipe` asks for scale_2.
Packed pack(const std::vector<float>& values, int n, int k, bool recipe) {
  std::vector<bf16_bits> weight(values.size());
  for (std::size_t i = 0; i < values.size(); ++i) {
    weight[i] = format::float_to_bf16(values[i]);
    EXPECT_EQ(format::bf16_to_float(weight[i]), values[i]) << "test input not bf16-exact";
  }
  Packed out;
  out.packed.assign(static_cast<std::size_t>(n) * k / 2, 0xEE);
  out.scale.assign(static_cast<std::size_t>(n) * k / 16, 0xEE);
  PackNvfp4 args{
      weight.data(), out.packed.data(), out.scale.data(), recipe ? &out.scale_2 : nullptr, n, k};
  pack_nvfp4(args);
  return out;
}

// 16 values from the e2m1 grid scaled by `unit`, in code order 0..7 then their negatives.
std::vector<float> grid_block(float unit) {
  std::vector<float> block;
  for (int code = 0; code < 16; ++code)
    block.push_back(format::e2m1_to_float(static_cast<std::uint8_t>(code)) * unit);
  return block;
}

// Packed bytes of codes 0..15 in k order: (0,1), (2,3), ... with even k low.
const std::vector<std::uint8_t> kGridBytes = {0x10, 0x32, 0x54, 0x76, 0x98, 0xBA, 0xDC, 0xFE};

TEST(CpuPack, AllZeroBlockGetsScaleOne) {
  std::vector<float> values(16, 0.0f);
  values.insert(values.end(), 16, -0.0f);
  for (bool recipe : {false, true}) {
    const Packed p = pack(values, 1, 32, recipe);
    EXPECT_EQ(p.scale, (std::vector<std::uint8_t>{0x38, 0x38})) << "e4m3(1.0) = 0x38";
    for (int j = 0; j < 8; ++j) EXPECT_EQ(p.packed[j], 0x00);
    for (int j = 8; j < 16; ++j) EXPECT_EQ(p.packed[j], 0x88) << "-0 keeps its sign bit";
    if (recipe) {
      EXPECT_EQ(p.scale_2, 1.0f) << "all-zero tensor: scale_2 finite and > 0";
    }
  }
}

TEST(CpuPack, MaxMagnitudeBlock) {
  // amax = 2688 -> scale_2 = 1 exactly; that block's sf = 2688/6 = 448 and x/448 is on the grid.
  std::vector<float> values = grid_block(448.0f);
  values.insert(values.end(), 16, 1.0f);  // sf = 1/6 -> e4m3 0.171875 (0x23); 1/0.171875 -> 6
  const Packed p = pack(values, 1, 32, true);
  EXPECT_EQ(p.scale_2, 1.0f);
  EXPECT_EQ(p.scale, (std::vector<std::uint8_t>{0x7E, 0x23}));
  for (int j = 0; j < 8; ++j) EXPECT_EQ(p.packed[j], kGridBytes[j]) << "byte " << j;
  for (int j = 8; j < 16; ++j) EXPECT_EQ(p.packed[j], 0x77) << "byte " << j;
}

TEST(CpuPack, ScaleClampsLowAndHighWithScale2One) {
  // Block 0: the grid times 2^-10, amax 6·2^-10, so sf = 2^-10 < 2^-9 -> clamped to 2^-9 (0x01);
  // each x / 2^-9 is then half a grid value: 0, .25, .5, .75, 1, 1.5, 2, 3 -> codes
  // 0, 0 (tie), 1, 2 (tie), 2, 3, 4, 5, and negated.
  // Block 1: amax 6144, sf = 1024 -> clamped to 448 (0x7E); 6144/448 saturates to 6.
  std::vector<float> values = grid_block(1.0f / 1024.0f);
  const std::vector<float> big = {6144.0f, -6144.0f, 448.0f, 896.0f, -224.0f, 0.0f,
                                  2688.0f, 1000.0f,  0.0f,   0.0f,   0.0f,    0.0f,
                                  0.0f,    0.0f,     0.0f,   0.0f};
  values.insert(values.end(), big.begin(), big.end());
  const Packed p = pack(values, 1, 32, false);
  EXPECT_EQ(p.scale, (std::vector<std::uint8_t>{0x01, 0x7E}));
  const std::vector<std::uint8_t> low = {0x00, 0x21, 0x32, 0x54, 0x88, 0xA9, 0xBA, 0xDC};
  for (int j = 0; j < 8; ++j) EXPECT_EQ(p.packed[j], low[j]) << "byte " << j;
  // 6144->7, -6144->F; 448->1.0 (2), 896->2.0 (4); -224->-0.5 (9), 0->0; 2688->6 (7),
  // 1000/448 = 2.23 -> 2.0 (4).
  const std::vector<std::uint8_t> expected = {0xF7, 0x42, 0x09, 0x47, 0x00, 0x00, 0x00, 0x00};
  for (int j = 0; j < 8; ++j) EXPECT_EQ(p.packed[8 + j], expected[j]) << "byte " << 8 + j;
}

TEST(CpuPack, ExactTies) {
  // Block 0: amax 6 with scale_2 = 1 -> sf = 1.0; each bound of NVFP4.md §4 goes to the even code.
  const std::vector<float> ties = {0.25f,  0.75f,  1.25f,  1.75f,  2.5f,  3.5f,  5.0f,  6.0f,
                                   -0.25f, -0.75f, -1.25f, -1.75f, -2.5f, -3.5f, -5.0f, -6.0f};
  // Block 1: sf = 11.25/6 = 1.875 (0x3F); 2.34375/1.875 = 1.25 exactly -> 1.0 (a reciprocal
  // multiply gives 1.2500001 -> 1.5); 9.375/1.875 = 5 -> 4; 4.6875/1.875 = 2.5 -> 2.
  const std::vector<float> division = {11.25f, 2.34375f, 9.375f, 4.6875f, -2.34375f, -9.375f,
                                       0.0f,   0.0f,     0.0f,   0.0f,    0.0f,      0.0f,
                                       0.0f,   0.0f,     0.0f,   0.0f};
  // Blocks 2 and 3: e4m3 ties of the scale. sf = 6.375/6 = 1.0625 -> 1.0 (0x38);
  // sf = 7.125/6 = 1.1875 -> 1.25 (0x3A).
  std::vector<float> values = ties;
  values.insert(values.end(), division.begin(), division.end());
  values.push_back(6.375f);
  values.insert(values.end(), 15, 0.0f);
  values.push_back(7.125f);
  values.insert(values.end(), 15, 0.0f);
  const Packed p = pack(values, 1, 64, false);
  EXPECT_EQ(p.scale, (std::vector<std::uint8_t>{0x38, 0x3F, 0x38, 0x3A}));
  // codes 0.25->0, 0.75->2, 1.25->2, 1.75->4, 2.5->4, 3.5->6, 5->6, 6->7, and negated.
  const std::vector<std::uint8_t> tie_bytes = {0x20, 0x42, 0x64, 0x76, 0xA8, 0xCA, 0xEC, 0xFE};
  for (int j = 0; j < 8; ++j) EXPECT_EQ(p.packed[j], tie_bytes[j]) << "byte " << j;
  // 11.25->6 (7), 2.34375->1.0 (2); 9.375->4 (6), 4.6875->2 (4); -2.34375 (A), -9.375 (E).
  const std::vector<std::uint8_t> div_bytes = {0x27, 0x46, 0xEA, 0x00, 0x00, 0x00, 0x00, 0x00};
  for (int j = 0; j < 8; ++j) EXPECT_EQ(p.packed[8 + j], div_bytes[j]) << "byte " << 8 + j;
  EXPECT_EQ(p.packed[16], 0x07) << "6.375 / 1.0 saturates to 6, in the low nibble";
  EXPECT_EQ(p.packed[24], 0x07) << "7.125 / 1.25 = 5.7 -> 6";
}

TEST(CpuPack, ScaleLayoutIsK16ByN) {
  // Three rows, two blocks; the scale of (n, b) must land at b·N + n.
  const int n = 3, k = 32;
  std::vector<float> values;
  const float block_amax[3][2] = {{6.0f, 12.0f}, {24.0f, 48.0f}, {96.0f, 192.0f}};
  for (int row = 0; row < n; ++row)
    for (int b = 0; b < 2; ++b) {
      values.push_back(block_amax[row][b]);
      values.insert(values.end(), 15, 0.0f);
    }
  const Packed p = pack(values, n, k, false);
  // sf = amax/6 = 1, 2, 4, 8, 16, 32 -> 0x38, 0x40, 0x48, 0x50, 0x58, 0x60.
  EXPECT_EQ(p.scale, (std::vector<std::uint8_t>{0x38, 0x48, 0x58, 0x40, 0x50, 0x60}));
  for (int row = 0; row < n; ++row) EXPECT_EQ(p.packed[row * 16], 0x07) << "row " << row;
}

TEST(CpuPack, RoundTripOnGridIsExact) {
  // Every block: a random e4m3 scale and random codes with a ±6 somewhere, so the recipe must
  // find exactly that scale (amax/6) and those codes; dequantizing gives the weights back.
  const int n = 37, k = 96;
  std::mt19937 rng(7);
  std::vector<float> values(static_cast<std::size_t>(n) * k);
  std::vector<std::uint8_t> want_codes(values.size()), want_scale(n * (k / 16));
  for (int row = 0; row < n; ++row)
    for (int b = 0; b < k / 16; ++b) {
      const auto sf =
          static_cast<std::uint8_t>(std::uniform_int_distribution<int>(0x08, 0x7E)(rng));
      want_scale[b * n + row] = sf;
      const int at_max = std::uniform_int_distribution<int>(0, 15)(rng);
      for (int i = 0; i < 16; ++i) {
        auto code = static_cast<std::uint8_t>(std::uniform_int_distribution<int>(0, 15)(rng));
        if (i == at_max) code = (code & 0x8) | 0x7;
        const std::size_t at = static_cast<std::size_t>(row) * k + b * 16 + i;
        want_codes[at] = code;
        values[at] = format::e2m1_to_float(code) * format::e4m3_to_float(sf);
      }
    }
  const Packed p = pack(values, n, k, false);
  EXPECT_EQ(p.scale, want_scale);
  for (int row = 0; row < n; ++row)
    for (int col = 0; col < k; ++col) {
      const std::uint8_t byte = p.packed[static_cast<std::size_t>(row) * (k / 2) + col / 2];
      const std::uint8_t code = col % 2 ? byte >> 4 : byte & 0xF;
      const std::size_t at = static_cast<std::size_t>(row) * k + col;
      ASSERT_EQ(code, want_codes[at]) << "row " << row << " col " << col;
      const float back =
          format::e2m1_to_float(code) * format::e4m3_to_float(p.scale[(col / 16) * n + row]);
      ASSERT_EQ(test::bits_from_float(back), test::bits_from_float(values[at]));
    }
}

// The recipe re-derived with plain arithmetic and grid searches (not the format/ encoders).
TEST(CpuPack, MatchesNaiveRecipeOnRandomWeights) {
  const int n = 64, k = 256;
  const std::vector<bf16_bits> weight = test::random_normal_bf16(n * k, 11, 0.02f);
  std::vector<std::uint8_t> packed(n * k / 2), scale(n * k / 16);
  float scale_2 = 0.0f;
  pack_nvfp4(PackNvfp4{weight.data(), packed.data(), scale.data(), &scale_2, n, k});

  double e4m3_grid[127];
  for (int c = 0; c < 127; ++c)
    e4m3_grid[c] =
        (c >> 3) == 0 ? std::ldexp(c & 7, -9) : std::ldexp(1.0 + (c & 7) / 8.0, (c >> 3) - 7);
  const double e2m1_grid[8] = {0, 0.5, 1, 1.5, 2, 3, 4, 6};
  float amax = 0.0f;
  for (bf16_bits w : weight) amax = std::max(amax, std::fabs(format::bf16_to_float(w)));
  const float want_scale_2 = amax / 2688.0f;
  EXPECT_EQ(scale_2, want_scale_2);
  for (int row = 0; row < n; ++row)
    for (int b = 0; b < k / 16; ++b) {
      float block_amax = 0.0f;
      for (int i = 0; i < 16; ++i)
        block_amax =
            std::max(block_amax, std::fabs(format::bf16_to_float(weight[row * k + b * 16 + i])));
      float sf = block_amax / (6.0f * want_scale_2);
      if (sf == 0.0f) sf = 1.0f;
      sf = std::min(std::max(sf, 1.0f / 512.0f), 448.0f);
      const int sf_code = test::nearest_code_ties_even(e4m3_grid, sf);
      ASSERT_EQ(scale[b * n + row], sf_code) << "row " << row << " block " << b;
      const float denominator = static_cast<float>(e4m3_grid[sf_code]) * want_scale_2;
      for (int i = 0; i < 16; ++i) {
        const int col = b * 16 + i;
        const float q = format::bf16_to_float(weight[row * k + col]) / denominator;
        const int code =
            test::nearest_code_ties_even(e2m1_grid, std::fabs(q)) | (std::signbit(q) ? 8 : 0);
        const std::uint8_t byte = packed[row * (k / 2) + col / 2];
        ASSERT_EQ(col % 2 ? byte >> 4 : byte & 0xF, code) << "row " << row << " col " << col;
      }
    }
}

}  // namespace
}  // namespace metrale::cpu
