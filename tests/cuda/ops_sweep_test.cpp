// Every operation of the CUDA backend against the CPU oracle over the constraint-derived shapes
// of cuda_test_support.hpp, through the shared harness (tools/check): exact mode bit for bit, then
// realistic mode (GEMMs within the derived tolerance; packing always bit for bit). Each case also
// poisons the outputs with NaN, checks the guard bands around every buffer and requires a second
// run to be bitwise identical.
#include <span>

#include <gtest/gtest.h>

#include "cuda_test_support.hpp"

namespace metrale::cuda_test {
namespace {

// kernel: "" for the dispatcher's choice (the decode family for NVFP4 rows up to 256), or a
// family forced as METRALE_CUDA_KERNEL would.
void sweep_gemm(Op op, Mode mode, std::span<const int> ms, std::span<const int> ns,
                std::span<const int> ks, const char* kernel = "") {
  int failures = 0;
  for (int m : ms)
    for (int n : ns)
      for (int k : ks) {
        check::Case c = gemm_case(op, mode, m, n, k, 1000 + m * 31 + n * 7 + k);
        c.cuda_kernel = kernel;
        if (!expect_pass(c) && ++failures >= kMaxReportedFailures) return;
      }
}

// pack, sfb and transpose: N x K with K at and around 16-element blocks and 64-wide SFB tiles;
// pack on each quantize kernel (`quantizer`, as METRALE_CUDA_QUANTIZER).
void sweep_pack(Op op, Mode mode, const char* quantizer = "") {
  static constexpr int kPackN[] = {1, 8, 63, 64, 65, 127, 128, 129, 200};
  // 272 and 528: a K tail past the quantizer's 256-element tiles.
  static constexpr int kPackK[] = {16, 32, 48, 64, 96, 272, 528, 2048};
  int failures = 0;
  for (int n : kPackN) {
    for (int k : kPackK) {
      for (int variant = 0; variant < 2; ++variant) {
        check::Case c = gemm_case(op, mode, 0, n, k, 2000 + n * 13 + k + variant);
        c.pack_scale_2 = variant == 0;
        c.sfb_src_n_major = variant == 0;
        c.transpose_dir = variant == 0 ? TransposeDir::k_to_n : TransposeDir::n_to_k;
        c.cuda_quantizer = quantizer;
        if (!expect_pass(c) && ++failures >= kMaxReportedFailures) return;
      }
    }
  }
}

// prepacked: the weights in prepack_nvfp4's layout, for the oracle and the kernels alike.
void sweep_grouped(Op op, Mode mode, const char* kernel = "", bool prepacked = false) {
  int failures = 0;
  std::uint64_t seed = 3000;
  sweep_grouped_shapes(op, mode, grouped_shapes(), kernel, prepacked, seed, failures);
}

TEST(ExactSweep, Bf16Gemm) {
  METRALE_SKIP_WITHOUT_GPU();
  sweep_gemm(Op::bf16_gemm, Mode::exact, kRowsM, kColsN, kDepthK);
}

TEST(ExactSweep, Nvfp4Gemm) {
  METRALE_SKIP_WITHOUT_GPU();
  sweep_gemm(Op::nvfp4_gemm, Mode::exact, kRowsM, kColsN, kDepthK);
}

TEST(ExactSweep, Pack) {
  METRALE_SKIP_WITHOUT_GPU();
  for (const char* quantizer : kQuantizers) sweep_pack(Op::pack, Mode::exact, quantizer);
}

TEST(ExactSweep, Sfb) {
  METRALE_SKIP_WITHOUT_GPU();
  sweep_pack(Op::sfb, Mode::exact);
}

TEST(ExactSweep, Transpose) {
  METRALE_SKIP_WITHOUT_GPU();
  sweep_pack(Op::transpose, Mode::exact);
}

TEST(ExactSweep, GroupedGateUp) {
  METRALE_SKIP_WITHOUT_GPU();
  sweep_grouped(Op::grouped_gate_up, Mode::exact);
}

TEST(ExactSweep, GroupedGateUpFused) {
  METRALE_SKIP_WITHOUT_GPU();
  sweep_grouped(Op::grouped_gate_up_fused, Mode::exact);
}

TEST(ExactSweep, GroupedDown) {
  METRALE_SKIP_WITHOUT_GPU();
  sweep_grouped(Op::grouped_down, Mode::exact);
}

// The tiled family on the shapes the dispatcher now gives the decode family.
TEST(TiledExactSweep, Nvfp4Gemm) {
  METRALE_SKIP_WITHOUT_GPU();
  sweep_gemm(Op::nvfp4_gemm, Mode::exact, kRowsM, kColsN, kDepthK, "sm90-tiled");
}

TEST(TiledExactSweep, GroupedGateUpFused) {
  METRALE_SKIP_WITHOUT_GPU();
  sweep_grouped(Op::grouped_gate_up_fused, Mode::exact, "sm90-tiled");
}

TEST(TiledExactSweep, GroupedDown) {
  METRALE_SKIP_WITHOUT_GPU();
  sweep_grouped(Op::grouped_down, Mode::exact, "sm90-tiled");
}

// Prepacked weights (both families decode them with their own bit moves): every grouped
// operation, the dispatcher's choice and the tiled family forced.
constexpr Op kGroupedOps[] = {Op::grouped_gate_up, Op::grouped_gate_up_fused, Op::grouped_down};

TEST(ExactSweep, GroupedPrepacked) {
  METRALE_SKIP_WITHOUT_GPU();
  for (Op op : kGroupedOps) sweep_grouped(op, Mode::exact, "", true);
}

TEST(TiledExactSweep, GroupedPrepacked) {
  METRALE_SKIP_WITHOUT_GPU();
  for (Op op : kGroupedOps) sweep_grouped(op, Mode::exact, "sm90-tiled", true);
}

TEST(RealisticSweep, GroupedPrepacked) {
  METRALE_SKIP_WITHOUT_GPU();
  for (Op op : kGroupedOps) sweep_grouped(op, Mode::realistic, "", true);
}

// Realistic mode: every M, the N and K that cross the alignments, random normal inputs.
constexpr int kRealisticN[] = {1, 63, 64, 65, 200};
constexpr int kRealisticK[] = {32, 96, 2048};

TEST(RealisticSweep, Bf16Gemm) {
  METRALE_SKIP_WITHOUT_GPU();
  sweep_gemm(Op::bf16_gemm, Mode::realistic, kRowsM, kRealisticN, kRealisticK);
}

TEST(RealisticSweep, Nvfp4Gemm) {
  METRALE_SKIP_WITHOUT_GPU();
  sweep_gemm(Op::nvfp4_gemm, Mode::realistic, kRowsM, kRealisticN, kRealisticK);
}

// The quantizer stress tensor: zero, large, small and subnormal blocks, exact ties, signed zeros
// (no NaN or Inf: refused, nonfinite_weight_test.cpp); magnitudes to 1e±30 in the seeds' form.
TEST(RealisticSweep, Pack) {
  METRALE_SKIP_WITHOUT_GPU();
  for (const char* quantizer : kQuantizers) sweep_pack(Op::pack, Mode::realistic, quantizer);
}

TEST(RealisticSweep, GroupedGateUp) {
  METRALE_SKIP_WITHOUT_GPU();
  sweep_grouped(Op::grouped_gate_up, Mode::realistic);
}

TEST(RealisticSweep, GroupedGateUpFused) {
  METRALE_SKIP_WITHOUT_GPU();
  sweep_grouped(Op::grouped_gate_up_fused, Mode::realistic);
}

TEST(RealisticSweep, GroupedDown) {
  METRALE_SKIP_WITHOUT_GPU();
  sweep_grouped(Op::grouped_down, Mode::realistic);
}

// A large quantizer input: many CTAs of the grid-stride loops, the amax reduction across them;
// both quantize kernels.
TEST(RealisticSweep, PackLarge) {
  METRALE_SKIP_WITHOUT_GPU();
  for (const char* quantizer : kQuantizers) {
    for (bool recipe : {true, false}) {
      check::Case c = gemm_case(Op::pack, Mode::realistic, 0, 4096, 7168, 77);
      c.pack_scale_2 = recipe;
      c.cuda_quantizer = quantizer;
      expect_pass(c);
    }
  }
}

}  // namespace
}  // namespace metrale::cuda_test
