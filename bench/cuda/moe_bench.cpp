// Op moe of the CUDA bench, one model at a time. Per token count, one row:
//   the layer     moe_forward, Backend::cuda: routing to combine, as a model runs it, with the
//                 model's routing and activation (bench/moe_layer.hpp), out only
//   its parts     on the routing the layer chose (its topk_ids_out), our grouped calls alone, as
//                 ops gate_up and down time them (nvfp4_grouped, Backend::cuda: gate_up gathering
//                 the tokens through sorted_token_ids, down on expert-ordered rows)
// and the ratio layer / (gate_up + down), issue 9's target. The weights are those ops' (the same
// pools and seeds), the three timings rotate over the same copies, and the layer's floor is
// gate_up's plus down's on its routing. Experts no token reaches point at a quantized one (the
// layer takes every expert's weights and reads none of theirs). When the layer cannot run (a CUDA
// limit, docs/api.md) its row says why and the grouped calls run on the CPU oracle's routing of
// the same logits.
#include <algorithm>
#include <array>
#include <memory>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "bench/cuda/bench_kernels.hpp"
#include "bench/cuda/cuda_bench.hpp"
#include "bench/moe_layer.hpp"
#include "bench/random.hpp"

namespace metrale::bench {
namespace {

const char* const kImpl = "metrale";

// One model's weights: gate and up (gate_up's pool), down (down's pool), biases, correction bias.
struct MoeWeights {
  MoeWeights(CudaContext& ctx, const ModelShape& m, int model_index)
      : gate_up(m.experts, 2, m.inter, m.hidden,
                derive_seed(ctx.cfg.seed, 0x77, model_index, static_cast<int>(Op::gate_up)), arena,
                ctx.stream),
        down(m.experts, 1, m.hidden, m.inter,
             derive_seed(ctx.cfg.seed, 0x77, model_index, static_cast<int>(Op::down)), arena,
             ctx.stream),
        host_correction_bias(correction_bias_of(m, ctx.cfg.seed)) {
    // The layer and its grouped parts are metrale's alone: the weights stay in the run's layout.
    gate_up.set_layout(ctx.cfg.weights);
    down.set_layout(ctx.cfg.weights);
    if (!host_correction_bias.empty()) {
      correction_bias = arena.allocate_n<float>(host_correction_bias.size());
      upload(correction_bias, host_correction_bias.data(),
             host_correction_bias.size() * sizeof(float), ctx.stream);
    }
    if (!m.moe.biases) return;
    const int widths[3] = {m.inter, m.inter, m.hidden};
    for (int p = 0; p < 3; ++p) {
      const std::size_t count = static_cast<std::size_t>(m.experts) * widths[p];
      bias[p] = arena.allocate_n<bf16_bits>(count);
      fill_normal_bf16(bias[p], count, bias_seed(ctx.cfg.seed, p), kBiasStddev, ctx.stream);
    }
  }

  DeviceArena arena;  // first: the pools allocate from it
  ExpertPool gate_up, down;
  std::vector<float> host_correction_bias;
  float* correction_bias = nullptr;
  std::array<bf16_bits*, 3> bias{};  // [E, N] per projection, or null
};

// The layer over each weight copy; its tables point unquantized experts at a quantized one.
struct LayerCopies {
  std::vector<std::array<std::vector<std::uint64_t>, 3>> packed, scale;  // [copy][projection]
  std::array<std::vector<std::uint64_t>, 3> bias_ptrs;
  std::vector<MoeLayer> layers;
};

void build_layers(const ModelShape& m, const MoeWeights& w, int copies, LayerCopies& out) {
  out.packed.assign(copies, {});
  out.scale.assign(copies, {});
  out.layers.assign(copies, layer_of(m));
  for (MoeLayer& layer : out.layers) layer.weight_layout = w.gate_up.layout();
  const int widths[3] = {m.inter, m.inter, m.hidden};
  for (int p = 0; p < 3 && w.bias[0]; ++p) {
    out.bias_ptrs[p].clear();
    for (int e = 0; e < m.experts; ++e)
      out.bias_ptrs[p].push_back(
          reinterpret_cast<std::uintptr_t>(w.bias[p] + static_cast<std::size_t>(e) * widths[p]));
  }
  for (int c = 0; c < copies; ++c) {
    const ExpertWeights views[3] = {w.gate_up.api_weights(c, 0), w.gate_up.api_weights(c, 1),
                                    w.down.api_weights(c, 0)};
    ExpertWeights* targets[3] = {&out.layers[c].gate, &out.layers[c].up, &out.layers[c].down};
    for (int p = 0; p < 3; ++p) {
      out.packed[c][p].assign(views[p].packed_ptrs, views[p].packed_ptrs + m.experts);
      out.scale[c][p].assign(views[p].scale_ptrs, views[p].scale_ptrs + m.experts);
      const auto spare = std::find_if(out.packed[c][p].begin(), out.packed[c][p].end(),
                                      [](std::uint64_t a) { return a != 0; });
      const std::size_t s = static_cast<std::size_t>(spare - out.packed[c][p].begin());
      alias_unquantized(out.packed[c][p], out.packed[c][p][s]);
      alias_unquantized(out.scale[c][p], out.scale[c][p][s]);
      *targets[p] = {out.packed[c][p].data(), out.scale[c][p].data(), views[p].scale2_vals};
    }
    if (w.correction_bias) out.layers[c].correction_bias = w.correction_bias;
    if (w.bias[0]) {
      out.layers[c].gate_bias_ptrs = out.bias_ptrs[0].data();
      out.layers[c].up_bias_ptrs = out.bias_ptrs[1].data();
      out.layers[c].down_bias_ptrs = out.bias_ptrs[2].data();
    }
  }
}

// Rotated copies for all three timings: as many as op down would use (the smallest weights, so
// the most copies), fewer when device memory would not hold them.
int plan_copies(CudaContext& ctx, const MoeWeights& w, const std::vector<std::int32_t>& active) {
  const double n = static_cast<double>(active.size());
  int copies = std::max(ctx.copies_for(n * w.gate_up.nvfp4_slot_bytes()),
                        ctx.copies_for(n * w.down.nvfp4_slot_bytes()));
  const std::size_t free = free_device_bytes();
  const std::size_t avail = free > kMemoryMarginBytes ? free - kMemoryMarginBytes : 0;
  const auto need = [&] {
    return w.gate_up.missing_nvfp4(active, copies) * w.gate_up.nvfp4_slot_bytes() +
           w.down.missing_nvfp4(active, copies) * w.down.nvfp4_slot_bytes();
  };
  while (copies > 1 && need() > avail) --copies;
  return copies;
}

void ensure_weights(MoeWeights& w, const std::vector<std::int32_t>& active, int copies) {
  w.gate_up.ensure_nvfp4(active, copies);
  w.down.ensure_nvfp4(active, copies);
}

// One token count's device buffers (the layer's, then the grouped calls').
struct TokenBuffers {
  int tokens = 0;
  bf16_bits* hidden = nullptr;  // [T, H]: also gate_up's activations, as op gate_up draws them
  float* logits = nullptr;      // [T, E]
  bf16_bits* out = nullptr;     // [T, H]
  std::int32_t* ids_out = nullptr;
  float* weights_out = nullptr;  // [T, k] each
  std::uint32_t* cmp = nullptr;
};

TokenBuffers allocate_tokens(CudaContext& ctx, const ModelShape& m, int tokens,
                             const std::vector<float>& logits, DeviceArena& scratch) {
  TokenBuffers b;
  b.tokens = tokens;
  const std::size_t x = static_cast<std::size_t>(tokens) * m.hidden;
  const std::size_t slots = static_cast<std::size_t>(tokens) * m.top_k;
  b.hidden = scratch.allocate_n<bf16_bits>(x);
  fill_normal_bf16(b.hidden, x,
                   derive_seed(ctx.cfg.seed, 0x616374, static_cast<int>(Op::gate_up), tokens), 1.0f,
                   ctx.stream);
  b.logits = scratch.allocate_n<float>(logits.size());
  upload(b.logits, logits.data(), logits.size() * sizeof(float), ctx.stream);
  b.out = scratch.allocate_n<bf16_bits>(x);
  b.ids_out = scratch.allocate_n<std::int32_t>(slots);
  b.weights_out = scratch.allocate_n<float>(slots);
  b.cmp = scratch.allocate_n<std::uint32_t>(4);
  return b;
}

MoeTokens layer_tokens(const TokenBuffers& b, bool routing_out) {
  MoeTokens t;
  t.num_tokens = b.tokens;
  t.hidden = b.hidden;
  t.router_logits = b.logits;
  t.out = b.out;
  if (routing_out) {
    t.topk_ids_out = b.ids_out;
    t.topk_weights_out = b.weights_out;
  }
  return t;
}

// The layer's first call (its routing, its output's NaN count), then its timing.
struct LayerRun {
  bool ok = false;
  std::string error, note;
  std::vector<std::int32_t> ids;
  long long nan_outputs = -1;
  CallNodes nodes;  // what one call launches
  Stats stats;
};

// The layer's workspace: what moe_workspace_size asks for (a backend that cannot say fails, with
// its reason, when called).
Exec layer_exec(CudaContext& ctx, const LayerCopies& l, int tokens, DeviceArena& scratch) {
  std::size_t bytes = 0;
  if (!moe_workspace_size(Backend::cuda, l.layers[0], tokens, &bytes).ok()) bytes = 0;
  return Exec{Backend::cuda, bytes > 0 ? scratch.allocate(bytes) : nullptr, bytes, ctx.stream};
}

LayerRun first_layer_call(CudaContext& ctx, const ModelShape& m, const LayerCopies& l,
                          const TokenBuffers& b, const Exec& exec) {
  LayerRun run;
  try {
    const std::size_t x = static_cast<std::size_t>(b.tokens) * m.hidden;
    METRALE_CUDA_CHECK(cudaMemsetAsync(b.out, 0xFF, x * sizeof(bf16_bits), ctx.stream));  // NaN
    check(moe_forward(l.layers[0], layer_tokens(b, true), exec));
    METRALE_CUDA_CHECK(cudaStreamSynchronize(ctx.stream));
    run.ids.resize(static_cast<std::size_t>(b.tokens) * m.top_k);
    METRALE_CUDA_CHECK(cudaMemcpy(run.ids.data(), b.ids_out, run.ids.size() * sizeof(std::int32_t),
                                  cudaMemcpyDeviceToHost));
    run.nan_outputs = compare_bf16(b.out, b.out, x, b.cmp, ctx.stream).nan_count;
    run.ok = true;
  } catch (const std::exception& e) {
    run.error = e.what();
    require_usable_device("moe_forward", run.error);
  }
  return run;
}

void time_layer(CudaContext& ctx, const LayerCopies& l, const TokenBuffers& b, const Exec& exec,
                LayerRun& run) {
  const MoeTokens tokens = layer_tokens(b, false);  // as a model calls it: out only
  const int copies = static_cast<int>(l.layers.size());
  try {
    const Enqueue call = [&](int i) { check(moe_forward(l.layers[i % copies], tokens, exec)); };
    run.nodes = count_nodes(call, ctx.stream);
    run.stats = time_device(call, ctx.stream, ctx.policy(copies), &run.note);
  } catch (const std::exception& e) {
    run.ok = false;
    run.error = e.what();
    require_usable_device("moe_forward", run.error);
  }
}

// One of our grouped calls alone on the layer's routing: op gate_up (the layer's own hidden
// states, gathered) or op down (expert-ordered rows drawn as op down draws them).
GroupedPart time_grouped(CudaContext& ctx, const ModelShape& m, const ExpertPool& pool, Op op,
                         const Routing& r, const TokenBuffers& b, int copies,
                         DeviceArena& scratch) {
  const bool gate_up = op == Op::gate_up;
  const int n = gate_up ? m.inter : m.hidden, k = gate_up ? m.hidden : m.inter;
  const int projections = gate_up ? 2 : 1, a_rows = gate_up ? r.tokens : r.rows();
  GroupedPart part;
  part.impl = kImpl;
  part.weight_copies = copies;
  part.work =
      grouped_work(static_cast<int>(r.active_experts.size()), projections, n, k, a_rows, r.rows());
  part.floor = floor_of(part.work, ctx.ceilings.read_gbps, ctx.ceilings.bf16_tflops);
  try {
    const bf16_bits* a = b.hidden;
    std::int32_t* ids = nullptr;
    if (gate_up) {
      ids = scratch.allocate_n<std::int32_t>(r.sorted_token_ids.size());
      upload(ids, r.sorted_token_ids.data(), r.sorted_token_ids.size() * sizeof(std::int32_t),
             ctx.stream);
    } else {
      bf16_bits* rows = scratch.allocate_n<bf16_bits>(static_cast<std::size_t>(a_rows) * k);
      fill_normal_bf16(rows, static_cast<std::size_t>(a_rows) * k,
                       derive_seed(ctx.cfg.seed, 0x616374, static_cast<int>(op), r.tokens), 1.0f,
                       ctx.stream);
      a = rows;
    }
    std::array<bf16_bits*, 2> out{};
    for (int p = 0; p < projections; ++p)
      out[p] = scratch.allocate_n<bf16_bits>(static_cast<std::size_t>(r.rows()) * n);
    std::size_t bytes = 0;
    check(nvfp4_grouped_workspace_size(Backend::cuda, expert_groups(r), n, k, projections, &bytes));
    const Exec exec{Backend::cuda, bytes > 0 ? scratch.allocate(bytes) : nullptr, bytes,
                    ctx.stream};
    const auto args = [&](int i) {
      return pool.grouped_call(i % copies, a, a_rows, ids, out, expert_groups(r));
    };
    part.stats = time_device([&](int i) { check(nvfp4_grouped(args(i), exec)); }, ctx.stream,
                             ctx.policy(copies), &part.note);
    part.kernel = cuda::nvfp4_grouped_plan(args(0)) + layout_label(pool.layout());
    part.ok = true;
  } catch (const std::exception& e) {
    part.error = e.what();
    require_usable_device(fmt::format("{} {}", kImpl, op_name(op)), part.error);
  }
  return part;
}

// Everything one token count measures on: the oracle's routing of its logits (host), then the
// device buffers, the weight copies and the layer over each.
struct TokenGroup {
  int tokens = 0;
  std::vector<float> logits;
  std::vector<std::int32_t> predicted;  // the CPU oracle's topk ids
  Routing oracle;
  DeviceArena scratch;
  TokenBuffers buffers;
  int copies = 1;
  LayerCopies layers;
  Exec exec;
};

void route_on_host(CudaContext& ctx, const ModelShape& m, TokenGroup& g) {
  g.logits = router_logits(g.tokens, m.experts, ctx.cfg.skew, ctx.cfg.seed);
  g.predicted = oracle_routing(m, g.logits, correction_bias_of(m, ctx.cfg.seed), g.tokens);
  g.oracle = routing_from_ids(g.tokens, m.experts, m.top_k, g.predicted);
}

void set_up(CudaContext& ctx, const ModelShape& m, MoeWeights& w, TokenGroup& g) {
  g.buffers = allocate_tokens(ctx, m, g.tokens, g.logits, g.scratch);
  g.copies = plan_copies(ctx, w, g.oracle.active_experts);
  ensure_weights(w, g.oracle.active_experts, g.copies);
  build_layers(m, w, g.copies, g.layers);
  g.exec = layer_exec(ctx, g.layers, g.tokens, g.scratch);
}

// A row for a token count where nothing could run, and why.
Row failed_row(const ModelShape& m, const TokenGroup& g, const std::string& why) {
  Row row = moe_row(m, g.oracle, kImpl);
  row.error = why;
  row.moe.routing_source = kOracleRouting;
  row.moe.gate_up.error = row.moe.down.error = why;
  return row;
}

// The layer, then its parts on the routing it chose.
Row measure(CudaContext& ctx, const ModelShape& m, MoeWeights& w, TokenGroup& g) {
  LayerRun run = first_layer_call(ctx, m, g.layers, g.buffers, g.exec);
  const bool layer_routed = run.ok;
  const Routing routing =
      layer_routed ? routing_from_ids(g.tokens, m.experts, m.top_k, run.ids) : g.oracle;
  if (routing.active_experts != g.oracle.active_experts) {  // the layer reads these experts
    ensure_weights(w, routing.active_experts, g.copies);
    build_layers(m, w, g.copies, g.layers);
  }
  if (run.ok) time_layer(ctx, g.layers, g.buffers, g.exec, run);
  Row row = moe_row(m, routing, kImpl);
  row.ok = run.ok;
  row.error = run.error;
  row.stats = run.stats;
  row.note = "moe_forward: the whole layer" + (run.note.empty() ? "" : "; " + run.note);
  row.weight_copies = g.copies;
  row.moe.routing_source = layer_routed ? kLayerRouting : kOracleRouting;
  if (layer_routed) row.moe.slots_differing = slots_differing(run.ids, g.predicted);
  row.moe.nan_outputs = run.nan_outputs;
  row.moe.layer_nodes = run.nodes;
  row.moe.gate_up =
      time_grouped(ctx, m, w.gate_up, Op::gate_up, routing, g.buffers, g.copies, g.scratch);
  row.moe.down = time_grouped(ctx, m, w.down, Op::down, routing, g.buffers, g.copies, g.scratch);
  row.work = row.moe.gate_up.work + row.moe.down.work;
  row.floor = chain_of(row.moe.gate_up.floor, row.moe.down.floor);
  return row;
}

void bench_tokens(CudaContext& ctx, const ModelShape& m, MoeWeights& w, int tokens,
                  Report& report) {
  TokenGroup g;
  g.tokens = tokens;
  route_on_host(ctx, m, g);
  const std::size_t first = report.rows.size();
  try {
    set_up(ctx, m, w, g);
    report.rows.push_back(measure(ctx, m, w, g));
  } catch (const Error& e) {
    // No weights or inputs (e.g. our packer cannot run on this device): the row says why.
    require_usable_device("the moe setup", e.what());
    report.rows.push_back(
        failed_row(m, g, std::string("setting up inputs and weights failed: ") + e.what()));
  }
  report.finish_group(first);
}

}  // namespace

void bench_moe(CudaContext& ctx, const ModelShape& m, int model_index, Report& report,
               Progress& progress) {
  if (!ctx.wants(Impl::metrale)) {  // the layer and its parts are ours alone
    fmt::print("{:<14} {:<9} not run: op moe measures metrale, which --impls leaves out\n", m.name,
               op_name(Op::moe));
    return;
  }
  std::unique_ptr<MoeWeights> weights;
  std::string why;
  try {
    weights = std::make_unique<MoeWeights>(ctx, m, model_index);
  } catch (const Error& e) {
    require_usable_device("the moe weights", e.what());
    why = std::string("setting up the weights failed: ") + e.what();
  }
  for (int tokens : ctx.cfg.tokens) {
    progress.step(fmt::format("{} moe T={}", m.name, tokens));
    if (weights) {
      bench_tokens(ctx, m, *weights, tokens, report);
      continue;
    }
    TokenGroup g;
    g.tokens = tokens;
    route_on_host(ctx, m, g);
    report.rows.push_back(failed_row(m, g, why));
    report.finish_group(report.rows.size() - 1);
  }
}

}  // namespace metrale::bench
