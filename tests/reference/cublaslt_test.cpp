// The cuBLASLt reference arm (the bench engineer's src/reference/cublaslt) through the public C++
// API (Backend::cublaslt) against the CPU oracle, like any backend: the dense bf16 GEMM, the
// naive NVFP4 path (dequantize to bf16, then cuBLASLt) and the grouped operations built from it,
// exact mode bit for bit and realistic mode within the derived tolerance. Also every algorithm
// cuBLASLt's heuristic returns (the seeds' algo test hook), each bit for bit in exact mode.
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "reference_test_util.hpp"

#ifdef METRALE_HAS_CUDA
#include <cuda_runtime.h>

#include "check/buffers.hpp"
#include "check/compare.hpp"
#include "reference/cublaslt/cublaslt_backend.hpp"
#endif

namespace metrale::reference_test {
namespace {

const int kShapes[][3] = {{1, 8, 16},      {3, 24, 48},     {65, 136, 208},   {128, 256, 256},
                          {257, 520, 272}, {1, 4096, 2048}, {512, 2880, 2880}};

TEST(CublasLt, DenseAndNvfp4ExactAndRealistic) {
  METRALE_SKIP_UNLESS_BUILT(Backend::cublaslt);
  for (const Op op : {Op::bf16_gemm, Op::nvfp4_gemm}) {
    for (const auto& s : kShapes) {
      expect_pass(gemm_case(Backend::cublaslt, op, Mode::exact, s[0], s[1], s[2], 2));
      expect_pass(gemm_case(Backend::cublaslt, op, Mode::realistic, s[0], s[1], s[2], 3));
    }
  }
}

TEST(CublasLt, GroupedExactAndRealistic) {
  METRALE_SKIP_UNLESS_BUILT(Backend::cublaslt);
  for (const Op op : {Op::grouped_gate_up, Op::grouped_gate_up_fused, Op::grouped_down}) {
    expect_pass(grouped_case(Backend::cublaslt, op, Mode::exact, 136, 208,
                             {13, 8, 2, check::RoutingKind::empty_expert}, 3));
    expect_pass(grouped_case(Backend::cublaslt, op, Mode::exact, 64, 128, {64, 256, 8}, 4));
    for (const std::int32_t tokens : {1, 64}) {
      check::Case c = grouped_case(Backend::cublaslt, op, Mode::realistic, 0, 0, {}, 9);
      check::apply_model(c, *check::find_model("gpt-oss-120b"), tokens);
      expect_pass(c);
    }
  }
}

#ifdef METRALE_HAS_CUDA
// Every heuristic cuBLASLt returns for a shape computes the same exact product.
TEST(CublasLt, EveryEnumeratedAlgorithmIsExact) {
  METRALE_SKIP_UNLESS_BUILT(Backend::cublaslt);
  const int m = 96, n = 264, k = 1040;
  ExactDenseGemm g(m, n, k, 31, reference::cublaslt::gemm_workspace_size(m, n, k));
  int count = 0;
  reference::cublaslt::bf16_gemm(g.args, g.ws, nullptr, 0, &count);
  ASSERT_GT(count, 0);
  for (int algo = 0; algo < count; ++algo) {
    SCOPED_TRACE("algo_index " + std::to_string(algo) + " of " + std::to_string(count));
    g.out.poison_bf16(check::kPoisonBf16);
    int again = 0;
    reference::cublaslt::bf16_gemm(g.args, g.ws, nullptr, algo, &again);
    EXPECT_EQ(again, count);
    check::device_synchronize("cublaslt bf16_gemm");
    const check::Comparison cmp =
        check::compare_bf16_bits(g.out.download<bf16_bits>(), g.want, n, {}, "out");
    EXPECT_EQ(cmp.mismatches, 0) << cmp.first_detail;
  }
  EXPECT_EQ(g.broken_guards(), "");
}
#endif  // METRALE_HAS_CUDA

}  // namespace
}  // namespace metrale::reference_test
