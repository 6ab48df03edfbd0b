// The ceilings of PERF.md, measured at the start of every run on the device in use: a streaming
// read over 1 GiB, a streaming copy of 1 GiB (for the quantizer's floor), and cuBLASLt's bf16
// 8192³ GEMM (cuBLASLt's first heuristic, fp32 accumulation). Inputs are random normal, never
// zeros (power, and so clocks, depend on the data).
#include <cstdint>

#include "bench/cuda/bench_kernels.hpp"
#include "bench/cuda/cuda_bench.hpp"
#include "bench/random.hpp"
#include "reference/cublaslt/cublaslt_backend.hpp"

namespace metrale::bench {
namespace {

constexpr std::size_t kStreamBytes = std::size_t{1} << 30;
constexpr int kGemmSize = 8192;
// The bf16 GEMM heats the card: warm it longer so the figure is the sustained rate under load.
constexpr double kGemmWarmupMs = 200;

}  // namespace

Ceilings measure_ceilings(CudaContext& ctx, DeviceArena& arena) {
  Ceilings c;
  cudaStream_t stream = ctx.stream;
  auto* src = arena.allocate_n<std::uint16_t>(kStreamBytes / 2);
  auto* dst = arena.allocate_n<std::uint16_t>(kStreamBytes / 2);
  auto* sink = arena.allocate_n<std::uint32_t>(1);
  fill_normal_bf16(src, kStreamBytes / 2, derive_seed(ctx.cfg.seed, 0xCE11), 1.0f, stream);

  TimingPolicy policy = ctx.policy(1);
  policy.allow_graph = false;  // 200+ µs per call: launch overhead is negligible
  c.read = time_device([&](int) { read_stream(src, kStreamBytes, sink, ctx.sms, stream); }, stream,
                       policy);
  c.read_gbps = static_cast<double>(kStreamBytes) / c.read.median_us / 1e3;
  c.copy = time_device([&](int) { copy_stream(src, dst, kStreamBytes, ctx.sms, stream); }, stream,
                       policy);
  c.copy_gbps = 2.0 * static_cast<double>(kStreamBytes) / c.copy.median_us / 1e3;

  const std::size_t square = static_cast<std::size_t>(kGemmSize) * kGemmSize;
  auto* a = arena.allocate_n<bf16_bits>(square);
  auto* b = arena.allocate_n<bf16_bits>(square);
  auto* out = arena.allocate_n<bf16_bits>(square);
  fill_normal_bf16(a, square, derive_seed(ctx.cfg.seed, 0xCE12), 1.0f, stream);
  fill_normal_bf16(b, square, derive_seed(ctx.cfg.seed, 0xCE13), 1.0f, stream);
  const DenseGemm gemm{a, b, out, kGemmSize, kGemmSize, kGemmSize};
  policy.warmup_ms = kGemmWarmupMs;
  policy.budget_ms = 2 * ctx.cfg.budget_ms;
  c.bf16 = time_device([&](int) { reference::cublaslt::bf16_gemm(gemm, ctx.lt_workspace, stream); },
                       stream, policy);
  c.bf16_tflops =
      2.0 * kGemmSize * static_cast<double>(kGemmSize) * kGemmSize / c.bf16.median_us / 1e6;
  c.measured = true;
  return c;
}

}  // namespace metrale::bench
