// The lean quantize kernel's block-scale table (src/cuda/pack/scale_table.hpp) on the host: built
// as the kernel builds it, its lookup (or, outside it, the recipe's division) equals
// format::block_scale_e4m3 for every bf16 amax pattern, over tensor amaxes from bf16 subnormals to
// the largest finite bf16 and the seeds' scale_2 = 1; and the table holds every block amax the
// recipe can meet down to 2^-18 of the top, so that the division stays out of the common path.
#include "cuda/pack/scale_table.hpp"

#include <cstdint>
#include <vector>

#include <gtest/gtest.h>

namespace metrale::cuda_test {
namespace {

using cuda::pack::kScaleTableBytes;

struct Table {
  std::uint32_t base;
  std::vector<std::uint8_t> bytes;
};

Table build(std::uint32_t top_bits, float scale_2) {
  Table t{cuda::pack::scale_table_base(top_bits), std::vector<std::uint8_t>(kScaleTableBytes)};
  for (std::uint32_t i = 0; i < kScaleTableBytes; ++i)
    t.bytes[i] = cuda::pack::scale_table_entry(t.base, i, scale_2);
  return t;
}

std::uint8_t look_up(const Table& t, std::uint32_t amax_bits, float scale_2) {
  const std::uint32_t at = cuda::pack::scale_table_index(amax_bits, t.base);
  return at < kScaleTableBytes
             ? t.bytes[at]
             : format::block_scale_e4m3(
                   format::bf16_to_float(static_cast<std::uint16_t>(amax_bits)), scale_2);
}

// Tensor amaxes over the whole bf16 range: every binade, a few mantissas each (powers of two,
// just below them, odd ones).
std::vector<std::uint32_t> tensor_amaxes() {
  std::vector<std::uint32_t> bits;
  for (std::uint32_t binade = 0; binade < 0xFF; binade += 3)
    for (std::uint32_t mantissa : {0u, 1u, 0x35u, 0x7Fu}) bits.push_back(binade << 7 | mantissa);
  bits.push_back(0x7F7Fu);  // the largest finite bf16
  return bits;
}

TEST(ScaleTable, SeedsSaturatingAmaxIs2688) {
  EXPECT_EQ(cuda::pack::kSeedsSaturatingAmaxBits, format::float_to_bf16(6.0f * 448.0f));
}

// Every bf16 magnitude pattern as a block amax (NaN and Inf patterns too: the seeds' form reads
// them before it refuses the weight), for each tensor amax's recipe scale_2 and the seeds' form.
TEST(ScaleTable, LookupEqualsTheRecipeForEveryBf16Amax) {
  std::int64_t in_table = 0;
  auto check = [&](bool computed, std::uint32_t tensor_amax) {
    const float scale_2 = computed ? format::scale_2_from_amax(format::bf16_to_float(
                                         static_cast<std::uint16_t>(tensor_amax)))
                                   : 1.0f;
    const Table t = build(cuda::pack::scale_table_top(computed, tensor_amax), scale_2);
    for (std::uint32_t amax = 0; amax <= 0x7FFFu; ++amax) {
      const std::uint8_t want = format::block_scale_e4m3(
          format::bf16_to_float(static_cast<std::uint16_t>(amax)), scale_2);
      ASSERT_EQ(look_up(t, amax, scale_2), want)
          << std::hex << "amax 0x" << amax << ", tensor amax 0x" << tensor_amax << ", computed "
          << computed;
      in_table += cuda::pack::scale_table_index(amax, t.base) < kScaleTableBytes;
    }
  };
  for (std::uint32_t tensor_amax : tensor_amaxes()) check(true, tensor_amax);
  check(false, 0);
  EXPECT_GT(in_table, 0);
}

// Scale_2 computed: every block amax from 2^-18 of the tensor's up to the tensor's is looked up,
// never divided (below 2^-18 the quotient is under 2^-9 and the scale the smallest, 0x01).
TEST(ScaleTable, HoldsEveryBlockAmaxWithin2ToThe18OfTheTensors) {
  for (std::uint32_t tensor_amax : tensor_amaxes()) {
    const std::uint32_t base = cuda::pack::scale_table_base(tensor_amax);
    const float top = format::bf16_to_float(static_cast<std::uint16_t>(tensor_amax));
    for (std::uint32_t amax = 1; amax <= tensor_amax; ++amax) {
      const float value = format::bf16_to_float(static_cast<std::uint16_t>(amax));
      if (value < top * 0x1p-18f) continue;
      ASSERT_LT(cuda::pack::scale_table_index(amax, base), kScaleTableBytes)
          << std::hex << "amax 0x" << amax << ", tensor amax 0x" << tensor_amax;
    }
  }
}

// The seeds' form (scale_2 = 1): every amax whose scale is neither the smallest nor the largest
// is in the table.
TEST(ScaleTable, SeedsFormHoldsEveryAmaxWhereTheScaleMoves) {
  const std::uint32_t base = cuda::pack::scale_table_base(cuda::pack::scale_table_top(false, 0));
  for (std::uint32_t amax = 1; amax < 0x7F80u; ++amax) {
    const std::uint8_t sf =
        format::block_scale_e4m3(format::bf16_to_float(static_cast<std::uint16_t>(amax)), 1.0f);
    if (sf == 0x01 || sf == 0x7E) continue;
    ASSERT_LT(cuda::pack::scale_table_index(amax, base), kScaleTableBytes)
        << std::hex << "amax 0x" << amax;
  }
}

}  // namespace
}  // namespace metrale::cuda_test
