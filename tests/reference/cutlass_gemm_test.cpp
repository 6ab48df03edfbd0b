// The CUTLASS reference arm's dense GEMMs (bf16_gemm_act_weight_t, nvfp4_gemm_bf16_act_weight_t)
// through the public C++ API with Backend::cutlass, against the CPU oracle (tools/check):
// exact mode bit for bit (small-integer activations, grid weights: every fp32 sum exact), then
// realistic mode within the harness's derived tolerance. Shapes from the kernels' limits: M = 1,
// 2, 3 and around the 64/128/256-row tiles, N around the 8-element TMA alignment and the 64/128/
// 256-column tiles, K at the 64-element k-tile and off it. NaN-poisoned outputs, guard bands and
// a bitwise-identical second run come with every case (run_case). Also: what CUTLASS cannot run
// is refused as unsupported with the value named, and a short workspace is refused.
#include <vector>

#include <gtest/gtest.h>

#ifdef METRALE_HAS_CUDA
#include <cuda_runtime.h>
#endif

#include "reference_test_util.hpp"

namespace metrale::reference_test {
namespace {

struct Shape {
  int m, n, k;
};

// Around every tile edge of the five kernels and the automatic choice.
const std::vector<Shape> kEdgeShapes = {
    {1, 8, 16},      {2, 16, 32},      {3, 24, 48},     {1, 4096, 2048},   {63, 64, 64},
    {64, 128, 128},  {65, 136, 208},   {127, 120, 64},  {128, 256, 256},   {129, 264, 320},
    {255, 248, 512}, {256, 512, 1024}, {257, 520, 272}, {1000, 776, 1040},
};

// Real projection shapes (PERF.md presets), decode and prefill row counts.
const std::vector<Shape> kModelShapes = {
    {8, 1536, 2048},    // Qwen3-30B-A3B gate_up of one token batch
    {64, 7168, 2048},   // DeepSeek-V3 down
    {512, 2880, 2880},  // gpt-oss-120b
    {4096, 4096, 1024},
};

TEST(CutlassGemm, Bf16ExactAtTileEdges) {
  METRALE_SKIP_UNLESS_BUILT(Backend::cutlass);
  for (const Shape& s : kEdgeShapes) {
    expect_pass(gemm_case(Backend::cutlass, Op::bf16_gemm, Mode::exact, s.m, s.n, s.k));
  }
}

TEST(CutlassGemm, Bf16RealisticModelShapes) {
  METRALE_SKIP_UNLESS_BUILT(Backend::cutlass);
  for (const Shape& s : kModelShapes) {
    expect_pass(gemm_case(Backend::cutlass, Op::bf16_gemm, Mode::realistic, s.m, s.n, s.k, 7));
  }
  expect_pass(gemm_case(Backend::cutlass, Op::bf16_gemm, Mode::realistic, 129, 264, 320, 3));
}

TEST(CutlassGemm, Nvfp4ExactAtTileEdges) {
  METRALE_SKIP_UNLESS_BUILT(Backend::cutlass);
  for (const Shape& s : kEdgeShapes) {
    expect_pass(gemm_case(Backend::cutlass, Op::nvfp4_gemm, Mode::exact, s.m, s.n, s.k, 2));
  }
}

TEST(CutlassGemm, Nvfp4RealisticModelShapes) {
  METRALE_SKIP_UNLESS_BUILT(Backend::cutlass);
  for (const Shape& s : kModelShapes) {
    expect_pass(gemm_case(Backend::cutlass, Op::nvfp4_gemm, Mode::realistic, s.m, s.n, s.k, 5));
  }
  // Several seeds on one unaligned shape: different scale_2 and scale bytes each time.
  for (std::uint64_t seed = 10; seed < 14; ++seed) {
    expect_pass(gemm_case(Backend::cutlass, Op::nvfp4_gemm, Mode::realistic, 65, 136, 208, seed));
  }
}

// The TMA store of the bf16 output needs N % 8 == 0; our own kernels take any N, CUTLASS refuses
// and says why (the harness reports the refusal as a skip carrying the message).
TEST(CutlassGemm, RefusesUnalignedNNamingTheValue) {
  METRALE_SKIP_UNLESS_BUILT(Backend::cutlass);
  for (const Op op : {Op::bf16_gemm, Op::nvfp4_gemm}) {
    expect_refused(gemm_case(Backend::cutlass, op, Mode::exact, 4, 100, 64),
                   {"N = 100", "N % 8 == 0", "CUTLASS"});
  }
}

#ifdef METRALE_HAS_CUDA
// A workspace smaller than gemm_workspace_size is refused before anything runs; one of exactly
// that size works (the size query is an upper bound of what the call carves, alignment slack
// included, even for a workspace that is only 16-byte aligned).
TEST(CutlassGemm, WorkspaceSizeIsEnoughAndShortIsRefused) {
  METRALE_SKIP_UNLESS_BUILT(Backend::cutlass);
  const int m = 32, n = 256, k = 512;
  std::size_t bytes = 0;
  ASSERT_TRUE(gemm_workspace_size(Backend::cutlass, m, n, k, &bytes).ok());
  EXPECT_GE(bytes, static_cast<std::size_t>(n) * k * 2) << "room for the dequantized weight";

  std::vector<bf16_bits> host_act(static_cast<std::size_t>(m) * k, 0x3F80);  // 1.0
  void *act = nullptr, *packed = nullptr, *scale = nullptr, *out = nullptr, *ws = nullptr;
  ASSERT_EQ(cudaMalloc(&act, host_act.size() * 2), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&packed, static_cast<std::size_t>(n) * k / 2), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&scale, static_cast<std::size_t>(n) * k / 16), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&out, static_cast<std::size_t>(m) * n * 2), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&ws, bytes + 16), cudaSuccess);
  cudaMemcpy(act, host_act.data(), host_act.size() * 2, cudaMemcpyHostToDevice);
  cudaMemset(packed, 0x22, static_cast<std::size_t>(n) * k / 2);  // codes 1.0
  cudaMemset(scale, 0x38, static_cast<std::size_t>(n) * k / 16);  // e4m3 1.0
  const Nvfp4Gemm args{static_cast<const bf16_bits*>(act),
                       static_cast<const std::uint8_t*>(packed),
                       static_cast<const std::uint8_t*>(scale),
                       0.5f,
                       ScaleLayout::k16_by_n,
                       static_cast<bf16_bits*>(out),
                       m,
                       n,
                       k};

  const Result short_ws =
      nvfp4_gemm_bf16_act_weight_t(args, Exec{Backend::cutlass, ws, bytes - 256, nullptr});
  EXPECT_EQ(short_ws.status, Status::workspace_too_small) << short_ws.message;

  // 16 bytes in: the arm must realign its regions inside the caller's workspace.
  void* shifted = static_cast<char*>(ws) + 16;
  const Result fits =
      nvfp4_gemm_bf16_act_weight_t(args, Exec{Backend::cutlass, shifted, bytes, nullptr});
  ASSERT_TRUE(fits.ok()) << fits.message;
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  std::vector<bf16_bits> got(static_cast<std::size_t>(m) * n);
  cudaMemcpy(got.data(), out, got.size() * 2, cudaMemcpyDeviceToHost);
  // Every output: K · (1.0 · 1.0 · 1.0) · scale_2 = 512 · 0.5 = 256 = bf16 0x4380.
  for (const bf16_bits v : got) ASSERT_EQ(v, 0x4380);
  for (void* p : {act, packed, scale, out, ws}) cudaFree(p);
}
#endif  // METRALE_HAS_CUDA

}  // namespace
}  // namespace metrale::reference_test
