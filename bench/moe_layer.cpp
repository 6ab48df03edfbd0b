// The host side of the bench's MoE layer (moe_layer.hpp).
#include "bench/moe_layer.hpp"

#include <algorithm>

#include "bench/bench_runners.hpp"
#include "bench/random.hpp"
#include "format/bf16.hpp"
#include "format/layouts.hpp"

namespace metrale::bench {

MoeLayer layer_of(const ModelShape& m) {
  return check::layer_skeleton(m.experts, m.hidden, m.inter, m.top_k, m.moe);
}

std::vector<float> correction_bias_of(const ModelShape& m, std::uint64_t seed) {
  if (!m.moe.correction_bias || m.moe.routing != MoeRouting::sigmoid_grouped_topk) return {};
  std::vector<float> bias(m.experts);
  const std::uint64_t s = derive_seed(seed, 0x62696173);  // "bias"
  for (int e = 0; e < m.experts; ++e) bias[e] = 0.1f * normal_at(s, static_cast<std::uint64_t>(e));
  return bias;
}

std::vector<std::int32_t> oracle_routing(const ModelShape& m, const std::vector<float>& logits,
                                         const std::vector<float>& correction_bias, int tokens) {
  constexpr int kWidth = 16;  // the smallest layer the API takes; the routing ignores it
  MoeLayer layer = layer_of(m);
  layer.hidden_size = layer.intermediate_size = kWidth;
  layer.activation = MoeActivation::silu;
  const std::vector<std::uint8_t> packed(kWidth * kWidth / 2, 0),
      sfb(format::sfb_bytes(kWidth, kWidth), 0);
  const std::vector<std::uint64_t> packed_ptrs(m.experts,
                                               reinterpret_cast<std::uintptr_t>(packed.data())),
      sfb_ptrs(m.experts, reinterpret_cast<std::uintptr_t>(sfb.data()));
  const std::vector<float> scale2(m.experts, 1.0f);
  layer.gate = layer.up = layer.down = {packed_ptrs.data(), sfb_ptrs.data(), scale2.data()};
  if (!correction_bias.empty()) layer.correction_bias = correction_bias.data();
  const std::vector<bf16_bits> hidden(static_cast<std::size_t>(tokens) * kWidth, 0);
  std::vector<bf16_bits> out(hidden.size());
  std::vector<std::int32_t> ids(static_cast<std::size_t>(tokens) * m.top_k);
  MoeTokens t;
  t.num_tokens = tokens;
  t.hidden = hidden.data();
  t.router_logits = logits.data();
  t.out = out.data();
  t.topk_ids_out = ids.data();
  check(moe_forward(layer, t, Exec{Backend::cpu}));
  return ids;
}

std::uint64_t bias_seed(std::uint64_t seed, int projection) {
  return derive_seed(seed, 0x62696173, static_cast<std::uint64_t>(projection) + 1);
}

void alias_unquantized(std::vector<std::uint64_t>& table, std::uint64_t spare) {
  std::replace(table.begin(), table.end(), std::uint64_t{0}, spare);
}

Row moe_row(const ModelShape& m, const Routing& r, const std::string& impl) {
  Row row;
  row.model = m.name;
  row.op = Op::moe;
  row.tokens = r.tokens;
  row.rows = r.rows();
  row.n = m.inter;  // gate and up [inter, hidden]; down is [hidden, inter]
  row.k = m.hidden;
  row.projections = 3;
  row.experts = m.experts;
  row.top_k = m.top_k;
  row.experts_active = static_cast<int>(r.active_experts.size());
  row.expert_rows = r.rows_per_expert();
  row.impl = impl;
  row.moe.recipe = check::recipe_text(m.moe);
  row.moe.gate_up.impl = row.moe.down.impl = impl;
  return row;
}

GroupedPart as_part(const Row& grouped) {
  return static_cast<const Measurement&>(grouped);
}

long long count_nan_bf16(const std::vector<bf16_bits>& values) {
  return std::count_if(values.begin(), values.end(),
                       [](bf16_bits v) { return format::is_nan_bits(format::bf16_to_float(v)); });
}

long long slots_differing(const std::vector<std::int32_t>& a, const std::vector<std::int32_t>& b) {
  long long differing = 0;
  for (std::size_t i = 0; i < std::min(a.size(), b.size()); ++i) differing += a[i] != b[i];
  return differing;
}

}  // namespace metrale::bench
