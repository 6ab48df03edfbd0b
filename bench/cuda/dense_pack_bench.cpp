// The dense and pack rows of the CUDA bench.
//   dense  out[T, 2·inter] = act[T, hidden] · W[2·inter, hidden]ᵀ in bf16: our bf16 GEMM
//          (Backend::cuda) against cuBLASLt — the best of every heuristic cuBLASLt returns, each
//          timed — and CUTLASS (Backend::cutlass, when enabled). PERF.md: ≥ 0.95× cuBLAS.
//   pack   pack_bf16_weight_to_nvfp4_t (full ModelOpt recipe, scale_2 computed) over stacked
//          expert weights of ≥ 256 MiB bf16; floor = bytes read + written over the copy ceiling.
//          Op pack_unit: the same in the seeds' form (scale_2_out null, scale_2 = 1: no amax
//          scan), the form of the C ABI's pack_bf16_weight_to_nvfp4_t; the same floor.
#include <algorithm>

#include <fmt/format.h>

#include "bench/cuda/bench_kernels.hpp"
#include "bench/cuda/cuda_bench.hpp"
#include "bench/random.hpp"
#include "reference/cublaslt/cublaslt_backend.hpp"

namespace metrale::bench {
namespace {

constexpr std::size_t kPackBytes = std::size_t{256} << 20;

Row base_row(const ModelShape& m, Op op, int tokens, int n, int k, Impl impl) {
  Row row;
  row.model = m.name;
  row.op = op;
  row.tokens = tokens;
  row.rows = tokens;
  row.n = n;
  row.k = k;
  row.experts = m.experts;
  row.top_k = m.top_k;
  row.impl = impl_label(impl);
  return row;
}

// cuBLASLt with every heuristic it offers timed; the row keeps the fastest.
Stats best_cublaslt(CudaContext& ctx, const std::vector<DenseGemm>& copies, Row& row) {
  int count = 0;
  reference::cublaslt::bf16_gemm(copies[0], ctx.lt_workspace, ctx.stream, 0, &count);
  Stats best;
  int best_index = -1;
  const int rotation = static_cast<int>(copies.size());
  TimingPolicy policy = ctx.policy(rotation);
  policy.budget_ms = std::max(ctx.cfg.budget_ms / std::max(count, 1), 5.0);
  policy.warmup_ms = 5;
  for (int a = 0; a < count; ++a) {
    try {
      const Stats s = time_device(
          [&](int i) {
            reference::cublaslt::bf16_gemm(copies[i % rotation], ctx.lt_workspace, ctx.stream, a);
          },
          ctx.stream, policy);
      if (best_index < 0 || s.median_us < best.median_us) {
        best = s;
        best_index = a;
      }
    } catch (const Error&) {
      // An algorithm that fails on this device is simply not a candidate.
    }
  }
  if (best_index < 0) fail(Status::unsupported, "none of {} cuBLASLt heuristics ran", count);
  row.note = fmt::format("best of {} cuBLASLt heuristics (#{})", count, best_index);
  // Run the winner once more so the output compared below is its output.
  reference::cublaslt::bf16_gemm(copies[0], ctx.lt_workspace, ctx.stream, best_index);
  return best;
}

}  // namespace

void bench_dense(CudaContext& ctx, const ModelShape& m, int tokens, DeviceArena& scratch,
                 Report& report) {
  const int n = 2 * m.inter, k = m.hidden;
  const std::size_t weight_elems = static_cast<std::size_t>(n) * k;
  const int copies = ctx.copies_for(2.0 * weight_elems);
  auto* act = scratch.allocate_n<bf16_bits>(static_cast<std::size_t>(tokens) * k);
  fill_normal_bf16(act, static_cast<std::size_t>(tokens) * k,
                   derive_seed(ctx.cfg.seed, 0xDE, tokens), 1.0f, ctx.stream);
  const std::size_t out_elems = static_cast<std::size_t>(tokens) * n;
  auto* out = scratch.allocate_n<bf16_bits>(out_elems);
  auto* ref = scratch.allocate_n<bf16_bits>(out_elems);
  auto* cmp = scratch.allocate_n<std::uint32_t>(4);
  std::vector<DenseGemm> gemms;
  for (int c = 0; c < copies; ++c) {
    auto* w = scratch.allocate_n<bf16_bits>(weight_elems);
    fill_normal_bf16(w, weight_elems, derive_seed(ctx.cfg.seed, 0xDF), kWeightStddev, ctx.stream);
    gemms.push_back(DenseGemm{act, w, out, tokens, n, k});
  }
  std::size_t ws_size = 0;
  for (Backend b : {Backend::cuda, Backend::cutlass}) {
    if (b == Backend::cutlass && !ctx.cutlass_enabled) continue;
    std::size_t bytes = 0;
    if (gemm_workspace_size(b, tokens, n, k, &bytes).ok()) ws_size = std::max(ws_size, bytes);
  }
  void* ws = ws_size ? scratch.allocate(ws_size) : nullptr;

  const std::size_t first = report.rows.size();
  bool have_ref = false;
  std::string ref_impl;
  for (Impl impl : ctx.cfg.impls) {
    if (impl != Impl::metrale && impl != Impl::cublaslt && impl != Impl::cutlass) continue;
    if (ctx.hides(impl)) continue;
    Row row = base_row(m, Op::dense, tokens, n, k, impl);
    row.work.flops = 2.0 * tokens * static_cast<double>(n) * k;
    row.work.bytes = 2.0 * (static_cast<double>(weight_elems) + static_cast<double>(tokens) * k +
                            static_cast<double>(out_elems));
    row.floor = floor_of(row.work, ctx.ceilings.read_gbps, ctx.ceilings.bf16_tflops);
    row.weight_copies = copies;
    add_row(report, row, [&] {
      ctx.require_enabled(impl);
      METRALE_CUDA_CHECK(cudaMemsetAsync(out, 0xFF, out_elems * sizeof(bf16_bits), ctx.stream));
      if (impl == Impl::cublaslt) {
        row.stats = best_cublaslt(ctx, gemms, row);
      } else {
        const Backend backend = impl == Impl::metrale ? Backend::cuda : Backend::cutlass;
        if (impl == Impl::metrale) row.kernel = cuda::bf16_gemm_plan(tokens, n, k);
        const Enqueue call = [&, backend](int i) {
          check(bf16_gemm_act_weight_t(gemms[i % copies], Exec{backend, ws, ws_size, ctx.stream}));
        };
        call(0);
        row.stats = time_device(call, ctx.stream, ctx.policy(copies), &row.note);
      }
      METRALE_CUDA_CHECK(cudaStreamSynchronize(ctx.stream));
      const Comparison c = compare_bf16(out, have_ref ? ref : out, out_elems, cmp, ctx.stream);
      row.check = Check{true, have_ref ? ref_impl : kCheckReference, c.max_abs_diff, c.max_abs_ref,
                        c.nan_count};
      if (!have_ref) {
        METRALE_CUDA_CHECK(cudaMemcpyAsync(ref, out, out_elems * sizeof(bf16_bits),
                                           cudaMemcpyDeviceToDevice, ctx.stream));
        have_ref = true;
        ref_impl = row.impl;
      }
    });
  }
  report.finish_group(first);
}

void bench_pack(CudaContext& ctx, const ModelShape& m, Op op, DeviceArena& scratch,
                Report& report) {
  const int k = m.hidden;
  const std::size_t wanted_rows =
      (kPackBytes / (2 * static_cast<std::size_t>(k)) + 127) / 128 * 128;
  const int n = static_cast<int>(
      std::min<std::size_t>(wanted_rows, static_cast<std::size_t>(m.experts) * 2 * m.inter));
  const std::size_t elems = static_cast<std::size_t>(n) * k;
  constexpr int kCopies = 2;  // each ≥ 256 MiB: far beyond L2 already
  std::vector<bf16_bits*> weights;
  for (int c = 0; c < kCopies; ++c) {
    weights.push_back(scratch.allocate_n<bf16_bits>(elems));
    fill_normal_bf16(weights.back(), elems, derive_seed(ctx.cfg.seed, 0xFA), kWeightStddev,
                     ctx.stream);
  }
  auto* packed = scratch.allocate_n<std::uint8_t>(elems / 2);
  auto* scale = scratch.allocate_n<std::uint8_t>(elems / 16);
  float* scale_2 = op == Op::pack ? scratch.allocate_n<float>(1) : nullptr;

  const std::size_t first = report.rows.size();
  Row row = base_row(m, op, 0, n, k, Impl::metrale);
  row.rows = n;
  row.work.bytes = static_cast<double>(elems) * (2.0 + 0.5 + 1.0 / 16);
  row.floor = floor_of(row.work, ctx.ceilings.copy_gbps, 0);
  row.weight_copies = kCopies;
  row.note = fmt::format("[{} x {}] bf16, {}", n, k, pack_form(op));
  add_row(report, row, [&] {
    const Enqueue call = [&](int i) {
      check(
          pack_bf16_weight_to_nvfp4_t(PackNvfp4{weights[i % kCopies], packed, scale, scale_2, n, k},
                                      Exec{Backend::cuda, nullptr, 0, ctx.stream}));
    };
    // The quantizer waits for its stream (the non-finite check), so it cannot be captured.
    TimingPolicy policy = ctx.policy(kCopies);
    policy.allow_graph = false;
    row.stats = time_device(call, ctx.stream, policy, nullptr);
  });
  report.finish_group(first);
}

}  // namespace metrale::bench
