// Check cases of the MoE layer (Op::moe): the layer of moe_case.hpp runs on the backend over every
// token (moe_memory.hpp: poisoned, guard-banded outputs), twice when checking determinism; the
// CPU oracle runs the sampled tokens (all of them unless that would take too long). Compared on
// those tokens: topk_ids_out and topk_weights_out bit for bit (in both modes: the routing is fp32
// operation for operation, docs/api.md), then out: bit for bit in exact mode, by the fp64 rule of
// compare_to_ideal in realistic mode.
#include <bit>
#include <memory>

#include <fmt/format.h>

#include "check/compare.hpp"
#include "check/moe_memory.hpp"
#include "check/moe_reference.hpp"
#include "check/runners.hpp"

namespace metrale::check::detail {
namespace {

// The sampled tokens' rows of a run over every token.
MoeOutputs sample(const MoeHost& h, const MoeOutputs& all, const std::vector<std::int64_t>& rows) {
  return {gather_rows(all.out, h.hidden, rows), gather_rows(all.ids, h.top_k, rows),
          gather_rows(all.weights, h.top_k, rows)};
}

std::int64_t count_poisoned(const MoeOutputs& o) {
  std::int64_t poisoned = count_poison(o.out);
  for (std::int32_t id : o.ids) poisoned += id == kPoisonId;
  for (float w : o.weights) poisoned += std::bit_cast<std::uint32_t>(w) == kPoisonWeightBits;
  return poisoned;
}

// All three outputs bit for bit; `rows` maps compared rows to tokens (empty: the identity).
Comparison compare_bits(const MoeHost& h, const MoeOutputs& got, const MoeOutputs& want,
                        std::span<const std::int64_t> rows) {
  Comparison cmp = compare_i32(got.ids, want.ids, h.top_k, rows, "topk_ids_out");
  cmp.merge(compare_f32_bits(got.weights, want.weights, h.top_k, rows, "topk_weights_out"));
  cmp.merge(compare_bf16_bits(got.out, want.out, h.hidden, rows, "out"));
  return cmp;
}

// Realistic mode: the routing bit for bit, out against the fp64 layer.
Comparison compare_realistic(const MoeHost& h, const MoeOutputs& got, const MoeOutputs& ref,
                             const std::vector<double>& ideal, const IdealRule& rule,
                             std::span<const std::int64_t> rows) {
  Comparison cmp = compare_i32(got.ids, ref.ids, h.top_k, rows, "topk_ids_out");
  cmp.merge(compare_f32_bits(got.weights, ref.weights, h.top_k, rows, "topk_weights_out"));
  cmp.merge(compare_to_ideal(got.out, ideal, rule, h.hidden, rows, "out"));
  return cmp;
}

std::unique_ptr<MoeMemory> memory_for(const Case& c, const MoeHost& h) {
  if (c.backend == Backend::cpu) return host_memory(h);
#ifdef METRALE_HAS_CUDA
  return device_memory(h);
#else
  throw HarnessError("the CUDA-side backends need a CUDA build");
#endif
}

struct MoeReference {
  std::vector<std::int64_t> rows;  // the sampled tokens
  MoeOutputs oracle;               // the CPU backend on those tokens
  std::vector<double> ideal;       // realistic mode: the fp64 layer on those tokens
};

void run_backend(const Case& c, const MoeHost& h, const MoeReference& ref, Report& report) {
  const std::unique_ptr<MoeMemory> memory = memory_for(c, h);
  const Exec exec{c.backend, nullptr, 0, nullptr};
  memory->poison();
  const Stopwatch watch;
  if (refused(c, memory->run(exec), report)) return;
  memory->synchronize(fmt::format("moe on {}", backend_name(c.backend)));
  report.backend_ms = watch.ms();
  const MoeOutputs got = memory->outputs();
  std::string again;
  if (c.check_determinism) {
    memory->poison();
    if (refused(c, memory->run(exec), report)) return;
    memory->synchronize("second run");
    const Comparison cmp = compare_bits(h, memory->outputs(), got, {});
    if (cmp.mismatches > 0) again = "second run differs from the first: " + cmp.first_detail;
  }
  // Values are compared on the sampled tokens; the poison is counted over every token's row.
  const MoeOutputs sampled = sample(h, got, ref.rows);
  if (c.mode == Mode::exact) {
    conclude(c, report, compare_bits(h, sampled, ref.oracle, ref.rows), count_poisoned(got),
             memory->damage(), again);
    return;
  }
  const IdealRule rule = ideal_rule(ref.oracle.out, ref.ideal);
  conclude(c, report, compare_realistic(h, sampled, ref.oracle, ref.ideal, rule, ref.rows),
           count_poisoned(got), memory->damage(), again);
  report.detail += fmt::format(
      "; out against the fp64 layer: max |diff| {:.3g}, limit {:.3g} = 2 x the CPU backend's "
      "{:.3g} + 2^-8 x {:.3g}",
      report.max_abs_error, rule.limit, rule.same_error, rule.ideal_max);
}

}  // namespace

Report run_moe_case(const Case& c) {
  const MoeHost h = make_moe_host(c);
  const std::int64_t macs_per_token =
      std::int64_t{3} * h.top_k * h.hidden * h.inter * (c.mode == Mode::exact ? 1 : 2);
  MoeReference ref;
  ref.rows = choose_rows(h.tokens, macs_per_token, c.sample_rows, c.seed);
  const Stopwatch watch;
  ref.oracle = moe_oracle(h, ref.rows);
  if (c.mode == Mode::realistic)
    ref.ideal = moe_ideal(h, ref.rows, ref.oracle.ids, ref.oracle.weights);
  const double oracle_ms = watch.ms();
  if (c.backend != Backend::cpu) {
    const std::string missing = device_missing(c);
    if (!missing.empty()) return skipped_after_oracle(c, missing, oracle_ms);
  }
  Report report;
  report.oracle_ms = oracle_ms;
  report.rows_compared = static_cast<std::int64_t>(ref.rows.size());
  report.rows_total = h.tokens;
  run_backend(c, h, ref, report);
  return report;
}

}  // namespace metrale::check::detail
