// One (model, gate_up | down, T) group of the CUDA bench: every implementation on the same
// stream, routing, activations and weights.
//   metrale           nvfp4_grouped, Backend::cuda: our fused kernels, NVFP4 weights, SFB scales;
//                     gate_up gathers token rows through sorted_token_ids inside the kernel
//   dequant+cuBLASLt  nvfp4_grouped, Backend::cublaslt: gather, dequantize each active expert to
//                     bf16, one cuBLASLt GEMM per expert and projection — all inside the timing
//   cuBLASLt          one cuBLASLt bf16 GEMM per active expert and projection over the weights
//                     dequantized once (outside the timing), on pre-gathered rows
//   cuBLAS-grouped    cublasGemmGroupedBatchedEx over the same bf16 weights and rows
//   CUTLASS           nvfp4_grouped, Backend::cutlass (only in a CUTLASS build with
//                     METRALE_CUTLASS_GEMM=1)
//   bf16-grouped (CUTLASS)
//                     CUTLASS's sm90 ptr-array grouped GEMM over the same bf16 weights and rows,
//                     with torch._grouped_mm's kernel choice (reference/cutlass/bf16_grouped.hpp);
//                     its per-group arrays are staged once per weight copy, outside the timing.
//                     Only in a CUTLASS build.
// The bf16 opponents read pre-gathered rows: the gather they would need is not charged to them.
// Each implementation runs once on NaN-poisoned outputs and is compared with the group's
// reference output (metrale's when it ran) before it is timed.
#include <cublas_v2.h>

#include <algorithm>
#include <functional>

#include <fmt/format.h>

#include "bench/cuda/bench_kernels.hpp"
#include "bench/cuda/cuda_bench.hpp"
#include "bench/random.hpp"
#include "reference/cublaslt/cublaslt_backend.hpp"
#include "reference/cublaslt/lt_check.hpp"
#if defined(METRALE_HAS_CUTLASS)
#include "reference/cutlass/bf16_grouped.hpp"
#endif

namespace metrale::bench {
namespace {

struct Setup {
  int n = 0, k = 0, projections = 1, a_rows = 0;
  bool gate_up = false;
  const Routing* routing = nullptr;
  bf16_bits* act = nullptr;       // [a_rows, k]: tokens (gate_up) or expert-ordered rows (down)
  bf16_bits* gathered = nullptr;  // [rows, k]: gate_up rows in group order (bf16 opponents)
  std::int32_t* ids = nullptr;    // [rows] device, gate_up only
  bf16_bits* out[2] = {};
  bf16_bits* ref[2] = {};
  std::size_t out_elems = 0;
  void* ws = nullptr;
  std::size_t ws_size = 0;
  std::uint32_t* cmp = nullptr;
  int nv_copies = 1, bf_copies = 0;
  std::string ref_impl;
  const bf16_bits* opponent_rows() const { return gate_up ? gathered : act; }
};

std::size_t workspace_for(Backend backend, const Routing& r, const Setup& s) {
  std::size_t bytes = 0;
  const Result res =
      nvfp4_grouped_workspace_size(backend, expert_groups(r), s.n, s.k, s.projections, &bytes);
  return res.ok() ? bytes : 0;  // a backend that cannot say will fail, with its reason, when run
}

void allocate_inputs(CudaContext& ctx, const Routing& r, Setup& s, DeviceArena& scratch, Op op) {
  const std::size_t rows = static_cast<std::size_t>(r.rows());
  s.act = scratch.allocate_n<bf16_bits>(static_cast<std::size_t>(s.a_rows) * s.k);
  fill_normal_bf16(s.act, static_cast<std::size_t>(s.a_rows) * s.k,
                   derive_seed(ctx.cfg.seed, 0x616374, static_cast<int>(op), r.tokens), 1.0f,
                   ctx.stream);
  if (s.gate_up) {
    s.ids = scratch.allocate_n<std::int32_t>(rows);
    upload(s.ids, r.sorted_token_ids.data(), rows * sizeof(std::int32_t), ctx.stream);
    s.gathered = scratch.allocate_n<bf16_bits>(rows * s.k);
    reference::cublaslt::gather_rows(s.act, s.a_rows, s.ids, r.rows(), s.k, s.gathered, ctx.stream);
  }
  s.out_elems = rows * s.n;
  for (int p = 0; p < s.projections; ++p) {
    s.out[p] = scratch.allocate_n<bf16_bits>(s.out_elems);
    s.ref[p] = scratch.allocate_n<bf16_bits>(s.out_elems);
  }
  for (Backend b : {Backend::cuda, Backend::cublaslt, Backend::cutlass}) {
    if (b == Backend::cutlass && !ctx.cutlass_enabled) continue;
    s.ws_size = std::max(s.ws_size, workspace_for(b, r, s));
  }
  if (s.ws_size > 0) s.ws = scratch.allocate(s.ws_size);
  s.cmp = scratch.allocate_n<std::uint32_t>(4);
  METRALE_CUDA_CHECK(cudaStreamSynchronize(ctx.stream));
}

// Rotated copies: enough for a cold pass, fewer when device memory would not hold them.
void plan_copies(CudaContext& ctx, const Routing& r, ExpertPool& pool, bool need_bf16, Setup& s,
                 std::string* note) {
  const double active = static_cast<double>(r.active_experts.size());
  int nv = ctx.copies_for(active * pool.nvfp4_slot_bytes());
  int bf = need_bf16 ? ctx.copies_for(active * pool.bf16_slot_bytes()) : 0;
  const std::size_t free = free_device_bytes();
  const std::size_t avail = free > kMemoryMarginBytes ? free - kMemoryMarginBytes : 0;
  const auto need = [&] {
    return pool.missing_nvfp4(r.active_experts, nv) * pool.nvfp4_slot_bytes() +
           pool.missing_bf16(r.active_experts, bf) * pool.bf16_slot_bytes();
  };
  while (need() > avail) {
    if (bf > 1) {
      --bf;
    } else if (nv > 1) {
      --nv;
    } else if (bf > 0) {
      bf = 0;
      *note = "not enough device memory for the bf16 weights of the cuBLAS opponents";
      break;
    } else {
      break;  // one NVFP4 copy; if even that does not fit, the allocation reports it
    }
  }
  s.nv_copies = nv;
  s.bf_copies = bf;
}

void poison(const Setup& s, cudaStream_t stream) {
  for (int p = 0; p < s.projections; ++p) {
    METRALE_CUDA_CHECK(cudaMemsetAsync(s.out[p], 0xFF, s.out_elems * sizeof(bf16_bits), stream));
  }
}

// The first implementation to run becomes the reference; the others are compared with it.
void verify(Setup& s, Row& row, cudaStream_t stream) {
  const bool first = s.ref_impl.empty();
  Check c;
  c.done = true;
  c.against = first ? kCheckReference : s.ref_impl;
  for (int p = 0; p < s.projections; ++p) {
    const Comparison cmp =
        compare_bf16(s.out[p], first ? s.out[p] : s.ref[p], s.out_elems, s.cmp, stream);
    c.max_abs_diff = std::max<double>(c.max_abs_diff, cmp.max_abs_diff);
    c.max_abs_ref = std::max<double>(c.max_abs_ref, cmp.max_abs_ref);
    c.nan_count += cmp.nan_count;
  }
  row.check = c;
  if (first) {
    for (int p = 0; p < s.projections; ++p) {
      METRALE_CUDA_CHECK(cudaMemcpyAsync(s.ref[p], s.out[p], s.out_elems * sizeof(bf16_bits),
                                         cudaMemcpyDeviceToDevice, stream));
    }
    METRALE_CUDA_CHECK(cudaStreamSynchronize(stream));
    s.ref_impl = row.impl;
  }
}

// Through the public API on `backend`: the same call our users make.
Enqueue api_call(CudaContext& ctx, const Setup& s, const ExpertPool& pool, Backend backend) {
  return [&ctx, &s, &pool, backend](int i) {
    const GroupedNvfp4 args = pool.grouped_call(i % s.nv_copies, s.act, s.a_rows, s.ids,
                                                {s.out[0], s.out[1]}, expert_groups(*s.routing));
    check(nvfp4_grouped(args, Exec{backend, s.ws, s.ws_size, ctx.stream}));
  };
}

// Which of our kernel families ran the metrale row, on which weight layout (the label the report
// and the plot carry).
std::string metrale_plan(const Setup& s, const ExpertPool& pool) {
  return cuda::nvfp4_grouped_plan(pool.grouped_call(0, s.act, s.a_rows, s.ids, {s.out[0], s.out[1]},
                                                    expert_groups(*s.routing))) +
         layout_label(pool.layout());
}

Enqueue cublaslt_call(CudaContext& ctx, const Setup& s, const ExpertPool& pool) {
  return [&ctx, &s, &pool](int i) {
    const Routing& r = *s.routing;
    const int c = i % s.bf_copies;
    for (int e : r.active_experts) {
      const int begin = r.offsets[e], rows = r.offsets[e + 1] - begin;
      const bf16_bits* a = s.opponent_rows() + static_cast<std::size_t>(begin) * s.k;
      for (int p = 0; p < s.projections; ++p) {
        bf16_bits* out = s.out[p] + static_cast<std::size_t>(begin) * s.n;
        reference::cublaslt::bf16_gemm(DenseGemm{a, pool.bf16(c, p, e), out, rows, s.n, s.k},
                                       ctx.lt_workspace, ctx.stream);
      }
    }
  };
}

// cublasGemmGroupedBatchedEx: one problem (its own group of size 1) per active expert and
// projection, column-major view as in the cuBLASLt arm: (m, n, k) = (N, rows_e, K), A = weight
// (transposed), B = rows, C = out. Pointer arrays live on the device, one A table per copy.
struct GroupedTables {
  std::vector<cublasOperation_t> trans_a, trans_b;
  std::vector<int> m, n, k, lda, ldb, ldc, group_size;
  std::vector<float> alpha, beta;
  std::vector<const void**> a_tables;  // per copy
  const void** b_table = nullptr;
  void** c_table = nullptr;
  int problems = 0;
};

GroupedTables make_tables(const Setup& s, const ExpertPool& pool, DeviceArena& scratch,
                          cudaStream_t stream) {
  const Routing& r = *s.routing;
  GroupedTables t;
  std::vector<const void*> b_host;
  std::vector<void*> c_host;
  for (int e : r.active_experts) {
    const int begin = r.offsets[e], rows = r.offsets[e + 1] - begin;
    for (int p = 0; p < s.projections; ++p) {
      t.trans_a.push_back(CUBLAS_OP_T);
      t.trans_b.push_back(CUBLAS_OP_N);
      t.m.push_back(s.n);
      t.n.push_back(rows);
      t.k.push_back(s.k);
      t.lda.push_back(s.k);
      t.ldb.push_back(s.k);
      t.ldc.push_back(s.n);
      t.group_size.push_back(1);
      t.alpha.push_back(1.0f);
      t.beta.push_back(0.0f);
      b_host.push_back(s.opponent_rows() + static_cast<std::size_t>(begin) * s.k);
      c_host.push_back(s.out[p] + static_cast<std::size_t>(begin) * s.n);
    }
  }
  t.problems = static_cast<int>(b_host.size());
  const std::size_t table_bytes = b_host.size() * sizeof(void*);
  t.b_table = static_cast<const void**>(scratch.allocate(table_bytes));
  t.c_table = static_cast<void**>(scratch.allocate(table_bytes));
  upload(t.b_table, b_host.data(), table_bytes, stream);
  upload(t.c_table, c_host.data(), table_bytes, stream);
  for (int c = 0; c < s.bf_copies; ++c) {
    std::vector<const void*> a_host;
    for (int e : r.active_experts) {
      for (int p = 0; p < s.projections; ++p) a_host.push_back(pool.bf16(c, p, e));
    }
    t.a_tables.push_back(static_cast<const void**>(scratch.allocate(table_bytes)));
    upload(t.a_tables.back(), a_host.data(), table_bytes, stream);
  }
  return t;
}

Enqueue cublas_grouped_call(CudaContext& ctx, const Setup& s, const GroupedTables& t) {
  return [&ctx, &s, &t](int i) {
#if CUBLAS_VERSION >= 120500
    METRALE_CUBLAS_CHECK(cublasSetStream(ctx.cublas, ctx.stream));
    METRALE_CUBLAS_CHECK(cublasGemmGroupedBatchedEx(
        ctx.cublas, t.trans_a.data(), t.trans_b.data(), t.m.data(), t.n.data(), t.k.data(),
        t.alpha.data(), t.a_tables[i % s.bf_copies], CUDA_R_16BF, t.lda.data(), t.b_table,
        CUDA_R_16BF, t.ldb.data(), t.beta.data(), t.c_table, CUDA_R_16BF, t.ldc.data(), t.problems,
        t.group_size.data(), CUBLAS_COMPUTE_32F));
#else
    (void)ctx, (void)s, (void)t, (void)i;
    fail(Status::not_built, "cuBLAS {} has no cublasGemmGroupedBatchedEx (needs 12.5+)",
         CUBLAS_VERSION);
#endif
  };
}

#if defined(METRALE_HAS_CUTLASS)
// bf16-grouped (CUTLASS): one plan per bf16 weight copy, each staged before the timing, so that a
// timed call is the grouped GEMM alone (torch._grouped_mm rebuilds its arrays with one small
// kernel per call: a few µs, which this arm is not charged).
struct Bf16GroupedArm {
  std::vector<reference::cutlass::Bf16GroupedPlan> plans;  // [copy]
  std::string kernel;
};

// Every expert of every projection, gate's then up's. The empty ones count in the kernel choice
// (torch averages the rows over all experts) and are left out of the launch.
reference::cutlass::Bf16Grouped bf16_grouped_args(const Setup& s, const ExpertPool& pool,
                                                  int copy) {
  const Routing& r = *s.routing;
  reference::cutlass::Bf16Grouped args;
  args.n = s.n;
  args.k = s.k;
  for (int p = 0; p < s.projections; ++p) {
    for (int e = 0; e < r.experts; ++e) {
      const int begin = r.offsets[e], rows = r.offsets[e + 1] - begin;
      args.groups.push_back({rows, s.opponent_rows() + static_cast<std::size_t>(begin) * s.k,
                             rows > 0 ? pool.bf16(copy, p, e) : nullptr,
                             s.out[p] + static_cast<std::size_t>(begin) * s.n});
    }
  }
  return args;
}

void prepare_bf16_grouped(CudaContext& ctx, const Setup& s, const ExpertPool& pool,
                          DeviceArena& scratch, Bf16GroupedArm& arm) {
  for (int c = 0; c < s.bf_copies; ++c) {
    const reference::cutlass::Bf16Grouped args = bf16_grouped_args(s, pool, c);
    const std::size_t bytes = reference::cutlass::bf16_grouped_workspace_size(args);
    void* ws = bytes > 0 ? scratch.allocate(bytes) : nullptr;
    arm.plans.emplace_back(args, core::Buffer{ws, bytes}, ctx.stream);
    arm.kernel = reference::cutlass::bf16_grouped_kernel_name(arm.plans.back().kernel());
  }
}

Enqueue bf16_grouped_call(CudaContext& ctx, const Setup& s, const Bf16GroupedArm& arm) {
  return [&ctx, &s, &arm](int i) { arm.plans[i % s.bf_copies].run(ctx.stream); };
}
#endif  // METRALE_HAS_CUTLASS

Row group_row(const ModelShape& m, Op op, const Routing& r, const Setup& s, Impl impl,
              const Ceilings& ceilings) {
  Row row;
  row.model = m.name;
  row.op = op;
  row.tokens = r.tokens;
  row.rows = r.rows();
  row.n = s.n;
  row.k = s.k;
  row.projections = s.projections;
  row.experts = m.experts;
  row.top_k = m.top_k;
  row.experts_active = static_cast<int>(r.active_experts.size());
  row.expert_rows = r.rows_per_expert();
  row.impl = impl_label(impl);
  row.work = grouped_work(row.experts_active, s.projections, s.n, s.k, s.a_rows, r.rows());
  row.floor = floor_of(row.work, ceilings.read_gbps, ceilings.bf16_tflops);
  return row;
}

}  // namespace

void bench_grouped(CudaContext& ctx, const ModelShape& m, Op op, const Routing& r, ExpertPool& pool,
                   DeviceArena& scratch, Report& report) {
  Setup s;
  s.gate_up = op == Op::gate_up;
  s.n = s.gate_up ? m.inter : m.hidden;
  s.k = s.gate_up ? m.hidden : m.inter;
  s.projections = s.gate_up ? 2 : 1;
  s.a_rows = s.gate_up ? r.tokens : r.rows();
  s.routing = &r;
  const bool need_bf16 =
      ctx.wants(Impl::cublaslt) || ctx.wants(Impl::cublas_grouped) || ctx.wants(Impl::bf16_grouped);
  std::string memory_note, setup_error;
  try {
    allocate_inputs(ctx, r, s, scratch, op);
    plan_copies(ctx, r, pool, need_bf16, s, &memory_note);
    pool.ensure_nvfp4(r.active_experts, s.nv_copies);
    if (s.bf_copies > 0) pool.ensure_bf16(r.active_experts, s.bf_copies);
  } catch (const Error& e) {
    // No weights or inputs (e.g. our packer cannot run on this device): every row says why.
    setup_error = std::string("setting up inputs and weights failed: ") + e.what();
  }

  const std::size_t first = report.rows.size();
  for (Impl impl : ctx.cfg.impls) {
    if (impl == Impl::metrale_cpu || ctx.hides(impl)) continue;
    Row row = group_row(m, op, r, s, impl, ctx.ceilings);
    const bool bf16_impl =
        impl == Impl::cublaslt || impl == Impl::cublas_grouped || impl == Impl::bf16_grouped;
    row.weight_copies = bf16_impl ? s.bf_copies : s.nv_copies;
    add_row(report, row, [&] {
      ctx.require_enabled(impl);
      if (!setup_error.empty()) fail(Status::internal, "{}", setup_error);
      if (bf16_impl && s.bf_copies == 0) fail(Status::workspace_too_small, "{}", memory_note);
      GroupedTables tables;
#if defined(METRALE_HAS_CUTLASS)
      Bf16GroupedArm bf16_arm;
#endif
      Enqueue call;
      switch (impl) {
        case Impl::metrale:
          pool.set_layout(ctx.cfg.weights);  // back to packed below, for the reference arms
          call = api_call(ctx, s, pool, Backend::cuda);
          break;
        case Impl::dequant_cublaslt: call = api_call(ctx, s, pool, Backend::cublaslt); break;
        case Impl::cutlass: call = api_call(ctx, s, pool, Backend::cutlass); break;
        case Impl::cublaslt: call = cublaslt_call(ctx, s, pool); break;
        case Impl::cublas_grouped:
          tables = make_tables(s, pool, scratch, ctx.stream);
          call = cublas_grouped_call(ctx, s, tables);
          break;
        case Impl::bf16_grouped:
#if defined(METRALE_HAS_CUTLASS)
          prepare_bf16_grouped(ctx, s, pool, scratch, bf16_arm);
          call = bf16_grouped_call(ctx, s, bf16_arm);
          row.kernel = bf16_arm.kernel;
          break;
#else
          fail(Status::not_built, "{}: this build has no CUTLASS", row.impl);
#endif
        case Impl::metrale_cpu: fail(Status::internal, "the CUDA bench has no {} row", row.impl);
      }
      poison(s, ctx.stream);
      call(0);
      METRALE_CUDA_CHECK(cudaStreamSynchronize(ctx.stream));
      verify(s, row, ctx.stream);
      row.stats = time_device(call, ctx.stream, ctx.policy(row.weight_copies), &row.note);
      if (impl == Impl::metrale) row.kernel = metrale_plan(s, pool);
    });
    pool.set_layout(WeightLayout::packed);
  }
  report.finish_group(first);
}

}  // namespace metrale::bench
