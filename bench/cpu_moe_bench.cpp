// The MoE layer's row of the CPU bench: moe_forward on Backend::cpu with the model's routing and
// activation, timed on the host clock; then, on the routing it chose (topk_ids_out), our gate_up
// and down grouped calls alone, as ops gate_up and down time them. The weights are those ops' (the
// same caches), so nothing is quantized twice; experts no token reaches point at a quantized one.
#include <array>

#include "bench/bench_runners.hpp"
#include "bench/cpu_bench.hpp"
#include "bench/moe_layer.hpp"
#include "bench/random.hpp"

namespace metrale::bench {
namespace {

// The layer over the host weights of `experts`, and the biases and correction bias it points to.
struct HostLayer {
  HostTables gate_up, down;
  std::array<std::vector<bf16_bits>, 3> bias;
  std::array<std::vector<std::uint64_t>, 3> bias_ptrs;
  std::vector<float> correction_bias;
  MoeLayer layer;
};

void add_biases(const ModelShape& m, std::uint64_t seed, HostLayer& h) {
  const int widths[3] = {m.inter, m.inter, m.hidden};
  for (int p = 0; p < 3; ++p) {
    h.bias[p] = normal_bf16(static_cast<std::size_t>(m.experts) * widths[p], bias_seed(seed, p),
                            kBiasStddev);
    for (int e = 0; e < m.experts; ++e)
      h.bias_ptrs[p].push_back(reinterpret_cast<std::uintptr_t>(
          h.bias[p].data() + static_cast<std::size_t>(e) * widths[p]));
  }
  h.layer.gate_bias_ptrs = h.bias_ptrs[0].data();
  h.layer.up_bias_ptrs = h.bias_ptrs[1].data();
  h.layer.down_bias_ptrs = h.bias_ptrs[2].data();
}

// Built in place: the layer points into the tables next to it.
void make_layer(const ModelShape& m, const std::vector<std::int32_t>& experts,
                std::map<Op, ExpertCache>& caches, std::uint64_t weight_seed,
                const BenchConfig& cfg, HostLayer& h) {
  h.gate_up = host_tables(m, Op::gate_up, experts, caches[Op::gate_up], weight_seed);
  h.down = host_tables(m, Op::down, experts, caches[Op::down], weight_seed);
  for (HostTables* t : {&h.gate_up, &h.down}) {
    for (int p = 0; p < (t == &h.gate_up ? 2 : 1); ++p) {
      alias_unquantized(t->packed[p], t->packed[p][experts.front()]);
      alias_unquantized(t->sfb[p], t->sfb[p][experts.front()]);
    }
  }
  h.layer = layer_of(m);
  h.layer.gate = h.gate_up.view(0);
  h.layer.up = h.gate_up.view(1);
  h.layer.down = h.down.view(0);
  h.correction_bias = correction_bias_of(m, cfg.seed);
  if (!h.correction_bias.empty()) h.layer.correction_bias = h.correction_bias.data();
  if (m.moe.biases) add_biases(m, cfg.seed, h);
}

// What the layer's own calls gave: its routing, its outputs' NaN count and its time.
struct LayerRun {
  bool ok = false;
  std::string error;
  std::vector<std::int32_t> ids;
  long long nan_outputs = -1;
  Stats stats;
};

LayerRun run_layer(const ModelShape& m, const HostLayer& h, const std::vector<bf16_bits>& hidden,
                   const std::vector<float>& logits, int tokens, const BenchConfig& cfg) {
  LayerRun run;
  std::vector<bf16_bits> out(hidden.size(), 0x7FC0);  // a NaN: what the layer leaves unwritten
  run.ids.assign(static_cast<std::size_t>(tokens) * m.top_k, -1);
  MoeTokens t;
  t.num_tokens = tokens;
  t.hidden = hidden.data();
  t.router_logits = logits.data();
  t.out = out.data();
  t.topk_ids_out = run.ids.data();
  try {
    check(moe_forward(h.layer, t, kCpu));
    run.nan_outputs = count_nan_bf16(out);
    t.topk_ids_out = nullptr;  // timed as a model runs it: out only
    run.stats = time_host([&] { check(moe_forward(h.layer, t, kCpu)); }, cfg.budget_ms);
    run.ok = true;
  } catch (const Error& e) {
    run.error = e.what();
  }
  return run;
}

GroupedPart grouped_part(const ModelShape& m, Op op, const Routing& r,
                         std::map<Op, ExpertCache>& caches, std::uint64_t weight_seed,
                         const BenchConfig& cfg) {
  Row row;
  row.impl = impl_label(Impl::metrale_cpu);
  try {
    run_grouped(m, op, r, caches[op], weight_seed, cfg, row);
  } catch (const Error& e) {
    row.ok = false;
    row.error = e.what();
  }
  return as_part(row);
}

}  // namespace

void run_cpu_moe(const ModelShape& m, int tokens, std::map<Op, ExpertCache>& caches,
                 std::uint64_t weight_seed, const BenchConfig& cfg, Report& report) {
  const std::vector<float> logits = router_logits(tokens, m.experts, cfg.skew, cfg.seed);
  const std::vector<std::int32_t> predicted =
      oracle_routing(m, logits, correction_bias_of(m, cfg.seed), tokens);
  HostLayer h;
  make_layer(m, routing_from_ids(tokens, m.experts, m.top_k, predicted).active_experts, caches,
             weight_seed, cfg, h);
  const std::vector<bf16_bits> hidden =
      grouped_activations(Op::gate_up, tokens, m.hidden, weight_seed);
  const LayerRun run = run_layer(m, h, hidden, logits, tokens, cfg);
  const Routing routing =
      routing_from_ids(tokens, m.experts, m.top_k, run.ok ? run.ids : predicted);
  Row row = moe_row(m, routing, impl_label(Impl::metrale_cpu));
  row.ok = run.ok;
  row.error = run.error;
  row.stats = run.stats;
  row.note = "moe_forward: the whole layer";
  row.moe.routing_source = run.ok ? kLayerRouting : kOracleRouting;
  if (run.ok) row.moe.slots_differing = slots_differing(run.ids, predicted);
  row.moe.nan_outputs = run.nan_outputs;
  row.moe.gate_up = grouped_part(m, Op::gate_up, routing, caches, weight_seed, cfg);
  row.moe.down = grouped_part(m, Op::down, routing, caches, weight_seed, cfg);
  row.work = row.moe.gate_up.work + row.moe.down.work;
  report.rows.push_back(std::move(row));
}

}  // namespace metrale::bench
