// The CUDA quantizer's two quantize kernels (METRALE_CUDA_QUANTIZER: proven, the default; lean)
// where the harness's buffers cannot go: a scale_t that is not 4-byte aligned (its scales leave a
// byte at a time, as for N % 4 != 0), against the CPU quantizer bit for bit, both forms. The
// shape sweeps run both kernels through the harness (ops_sweep_test.cpp, sanitizer_small_test.cpp,
// nonfinite_weight_test.cpp).
#include <cstdint>
#include <string_view>
#include <vector>

#include <gtest/gtest.h>

#include "cuda_test_support.hpp"

#ifdef METRALE_HAS_CUDA
#include "check/buffers.hpp"
#include "check/inputs.hpp"
#include "check/scoped_kernel.hpp"
#include "check/weights.hpp"
#endif

namespace metrale::cuda_test {
namespace {

#ifdef METRALE_HAS_CUDA

TEST(QuantizerKernels, UnalignedScaleBufferEqualsTheCpu) {
  METRALE_SKIP_WITHOUT_GPU();
  constexpr int kN = 64, kK = 272;  // N % 4 == 0: only the pointer keeps the scales byte-wise
  const std::vector<bf16_bits> weight = check::pack_stress_bf16(kN, kK, 41, false);
  for (const char* quantizer : kQuantizers) {
    const check::ScopedCudaQuantizer chosen(quantizer);
    for (bool recipe : {true, false}) {
      SCOPED_TRACE(testing::Message() << quantizer << " quantizer, scale_2 "
                                      << (recipe ? "computed" : "= 1"));
      const check::PackedWeight want = check::pack_weight_cpu(weight, kN, kK, recipe, false);
      check::DeviceBuffer w(weight.size() * 2, "weight_bf16"), packed(kN * kK / 2, "packed_t"),
          scale(kN * kK / 16 + 1, "scale_t"), scale_2(sizeof(float), "scale_2_out");
      w.upload(weight);
      const PackNvfp4 args{w.as<bf16_bits>(), packed.as<std::uint8_t>(),
                           scale.as<std::uint8_t>() + 1, recipe ? scale_2.as<float>() : nullptr,
                           kN, kK};
      const Result r = pack_bf16_weight_to_nvfp4_t(args, kCuda);
      ASSERT_EQ(r.status, Status::ok) << r.message;
      EXPECT_EQ(packed.download<std::uint8_t>(), want.packed);
      const std::vector<std::uint8_t> scales = scale.download<std::uint8_t>();
      EXPECT_EQ(std::vector<std::uint8_t>(scales.begin() + 1, scales.end()), want.scale);
      if (recipe) {
        EXPECT_EQ(scale_2.download<float>()[0], want.scale_2);
      }
      EXPECT_EQ(check::check_all_guards({&w, &packed, &scale, &scale_2}), "");
    }
  }
}

#else

TEST(QuantizerKernels, NeedsTheCudaBackend) {
  GTEST_SKIP() << "the CUDA backend was not built";
}

#endif

}  // namespace
}  // namespace metrale::cuda_test
