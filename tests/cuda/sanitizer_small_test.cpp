// The small-shape subset that scripts/gpu_run.sh runs under compute-sanitizer (memcheck,
// racecheck, synccheck; gtest filter *Small*): each operation on a few shapes that cross a tile
// edge and an alignment, exact mode, so that a sanitizer finding is reproducible and quick.
#include <gtest/gtest.h>

#include "cuda_test_support.hpp"

namespace metrale::cuda_test {
namespace {

TEST(SanitizerSmall, Gemms) {
  METRALE_SKIP_WITHOUT_GPU();
  for (Op op : {Op::bf16_gemm, Op::nvfp4_gemm}) {
    expect_pass(gemm_case(op, Mode::exact, 1, 8, 32));
    expect_pass(gemm_case(op, Mode::exact, 65, 65, 96));
    expect_pass(gemm_case(op, Mode::exact, 129, 200, 64));
  }
}

TEST(SanitizerSmall, Packing) {
  METRALE_SKIP_WITHOUT_GPU();
  for (Op op : {Op::pack, Op::sfb, Op::transpose}) {
    for (int variant = 0; variant < 2; ++variant) {
      check::Case c = gemm_case(op, variant ? Mode::realistic : Mode::exact, 0, 65, 48);
      c.pack_scale_2 = variant == 0;
      c.sfb_src_n_major = variant == 0;
      c.transpose_dir = variant == 0 ? TransposeDir::k_to_n : TransposeDir::n_to_k;
      expect_pass(c);
      c.n = 129;
      c.k = 96;
      expect_pass(c);
    }
  }
}

TEST(SanitizerSmall, Grouped) {
  METRALE_SKIP_WITHOUT_GPU();
  for (Op op : {Op::grouped_gate_up, Op::grouped_gate_up_fused, Op::grouped_down}) {
    expect_pass(grouped_case(op, Mode::exact, 65, 64, {9, 4, 2, RoutingKind::empty_expert}));
    expect_pass(grouped_case(op, Mode::exact, 8, 32, {3, 16, 2, RoutingKind::one_expert}));
  }
}

// Prepacked weights: the decode family's and the tiled family's own kernels for that layout.
TEST(SanitizerSmall, GroupedPrepacked) {
  METRALE_SKIP_WITHOUT_GPU();
  for (Op op : {Op::grouped_gate_up, Op::grouped_gate_up_fused, Op::grouped_down})
    for (const char* kernel : {"", "sm90-tiled"}) {
      check::Case c = grouped_case(op, Mode::exact, 65, 64, {9, 4, 2, RoutingKind::empty_expert});
      c.prepacked = true;
      c.cuda_kernel = kernel;
      expect_pass(c);
    }
}

}  // namespace
}  // namespace metrale::cuda_test
