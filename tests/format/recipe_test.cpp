// Tests of format/nvfp4_recipe.hpp, the ModelOpt recipe pieces (NVFP4.md §3-4): scale_2 from amax
// (the all-zero and non-finite tensors included), the block scale (zero block -> 1.0, clamps at
// 2^-9 and 448, e4m3 ties), the element code by IEEE division (a case where a reciprocal multiply
// lands one code away) and the dequantization product.
#include <cmath>
#include <cstdint>
#include <limits>

#include <gtest/gtest.h>

#include "format/nvfp4_recipe.hpp"

namespace metrale::format {
namespace {

TEST(Recipe, Scale2FromAmax) {
  EXPECT_EQ(scale_2_from_amax(2688.0f), 1.0f);
  EXPECT_EQ(scale_2_from_amax(1.0f), 1.0f / 2688.0f);
  EXPECT_EQ(scale_2_from_amax(5376.0f), 2.0f);
  // Always finite and > 0, so the packed weight is always a valid input of the GEMMs.
  EXPECT_EQ(scale_2_from_amax(0.0f), 1.0f) << "all-zero tensor";
  EXPECT_EQ(scale_2_from_amax(std::numeric_limits<float>::infinity()), 1.0f);
  EXPECT_EQ(scale_2_from_amax(std::numeric_limits<float>::quiet_NaN()), 1.0f);
  const float tiny = std::numeric_limits<float>::denorm_min();
  EXPECT_GT(scale_2_from_amax(tiny), 0.0f);
}

TEST(Recipe, AmaxIgnoresNanAndSign) {
  float amax = 0.0f;
  for (float x : {1.0f, -3.0f, std::numeric_limits<float>::quiet_NaN(), 2.0f})
    amax = amax_update(amax, x);
  EXPECT_EQ(amax, 3.0f);
}

TEST(Recipe, BlockScale) {
  EXPECT_EQ(block_scale_e4m3(0.0f, 1.0f), 0x38) << "all-zero block: sf = 1.0";
  EXPECT_EQ(block_scale_e4m3(0.0f, 1.0f / 2688.0f), 0x38);
  EXPECT_EQ(block_scale_e4m3(2688.0f, 1.0f), 0x7E) << "sf = 448 exactly";
  EXPECT_EQ(block_scale_e4m3(1e6f, 1.0f), 0x7E) << "clamps at 448";
  EXPECT_EQ(block_scale_e4m3(std::numeric_limits<float>::infinity(), 1.0f), 0x7E);
  EXPECT_EQ(block_scale_e4m3(1e-4f, 1.0f), 0x01) << "clamps at 2^-9";
  EXPECT_EQ(block_scale_e4m3(6.375f, 1.0f), 0x38) << "sf = 1.0625, tie to 1.0";
  EXPECT_EQ(block_scale_e4m3(7.125f, 1.0f), 0x3A) << "sf = 1.1875, tie to 1.25";
  EXPECT_EQ(block_scale_e4m3(11.25f, 1.0f), 0x3F) << "sf = 1.875";
  EXPECT_EQ(block_scale_e4m3(1.0f, 1.0f / 2688.0f), 0x7E) << "the amax block of a tensor";
  EXPECT_EQ(block_scale_e4m3(1.0f, std::numeric_limits<float>::quiet_NaN()), 0x7E)
      << "never a NaN scale byte";
}

TEST(Recipe, ElementCodeUsesIeeeDivision) {
  // sf = 1.875 (0x3F), scale_2 = 1: 2.34375 / 1.875 = 1.25 exactly, a tie that goes to 1.0
  // (code 2). Multiplying by fp32(1/1.875) gives 1.2500001 and code 3: the reciprocal is wrong.
  EXPECT_EQ(quantize_to_e2m1(2.34375f, 0x3F, 1.0f), 0x2);
  EXPECT_EQ(quantize_to_e2m1(9.375f, 0x3F, 1.0f), 0x6) << "5.0 exactly: tie to 4";
  EXPECT_EQ(quantize_to_e2m1(-2.34375f, 0x3F, 1.0f), 0xA);
  EXPECT_EQ(float_to_e2m1(2.34375f * (1.0f / 1.875f)), 0x3) << "the reciprocal's answer";
  // The denominator is the fp32 product e4m3(sf) · scale_2.
  EXPECT_EQ(quantize_to_e2m1(3.0f, 0x38, 0.5f), 0x7) << "3 / (1 · 0.5) = 6";
  EXPECT_EQ(quantize_to_e2m1(0.0f, 0x38, 1.0f), 0x0);
}

TEST(Recipe, Dequantize) {
  EXPECT_EQ(dequantize(0x7, 0x7E, 1.0f), 2688.0f);
  EXPECT_EQ(dequantize(0xF, 0x7E, 0.5f), -1344.0f);
  EXPECT_EQ(dequantize(0x1, 0x01, 1.0f), 1.0f / 1024.0f);
  EXPECT_EQ(dequantize(0x8, 0x38, 3.0f), 0.0f);
  // e2m1 × e4m3 is exact; scale_2 is one fp32 multiply.
  const float scale_2 = 1.0f / 2688.0f;
  EXPECT_EQ(dequantize(0x5, 0x3F, scale_2), 5.625f * scale_2);
}

}  // namespace
}  // namespace metrale::format
