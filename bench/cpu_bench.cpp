// `metrale bench` without a GPU: the same sweep on the CPU reference backend, through the public
// API (Backend::cpu, host memory), timed on the host clock and labelled metrale-cpu. No ceilings
// are measured on the CPU, so rows carry no floor. Weights are quantized with our packer (the CPU
// pack, then the SFB swizzle) for the experts the routing activates; the others stay null, which
// the API accepts for experts without rows (the MoE layer's row, cpu_moe_bench.cpp, points them at
// a quantized one: the layer takes every expert's weights).
#include "bench/cpu_bench.hpp"

#include <chrono>
#include <functional>
#include <map>

#include <fmt/format.h>

#include "bench/bench_runners.hpp"
#include "bench/progress.hpp"
#include "bench/random.hpp"
#include "bench/routing.hpp"
#include "core/error.hpp"
#include "format/bf16.hpp"
#include "format/layouts.hpp"
#include "metrale/metrale.hpp"

namespace metrale::bench {

std::vector<bf16_bits> normal_bf16(std::size_t count, std::uint64_t seed, float stddev) {
  std::vector<bf16_bits> out(count);
  for (std::size_t i = 0; i < count; ++i)
    out[i] = format::float_to_bf16(stddev * normal_at(seed, i));
  return out;
}

Stats time_host(const std::function<void()>& call, double budget_ms) {
  using clock = std::chrono::steady_clock;
  call();
  std::vector<double> samples;
  const auto start = clock::now();
  while (samples.size() < 3 ||
         (std::chrono::duration<double, std::milli>(clock::now() - start).count() < budget_ms &&
          samples.size() < 50)) {
    const auto t0 = clock::now();
    call();
    samples.push_back(std::chrono::duration<double, std::micro>(clock::now() - t0).count());
  }
  return summarize(std::move(samples), 1, "host");
}

ExpertWeights HostTables::view(int projection) const {
  return ExpertWeights{packed[projection].data(), sfb[projection].data(),
                       scale2[projection].data()};
}

namespace {

HostExpert quantize_expert(int n, int k, std::uint64_t seed) {
  const std::vector<bf16_bits> weight =
      normal_bf16(static_cast<std::size_t>(n) * k, seed, kWeightStddev);
  HostExpert h;
  h.packed.resize(static_cast<std::size_t>(n) * (k / 2));
  std::vector<std::uint8_t> scale(static_cast<std::size_t>(n) * (k / 16));
  check(pack_bf16_weight_to_nvfp4_t(
      PackNvfp4{weight.data(), h.packed.data(), scale.data(), &h.scale_2, n, k}, kCpu));
  h.sfb.resize(format::sfb_bytes(n, k));
  check(pack_weight_sfb(SwizzleScales{scale.data(), h.sfb.data(), n, k, true}, kCpu));
  return h;
}

Row base_row(const ModelShape& m, Op op, int tokens, const Routing* routing) {
  Row row;
  row.model = m.name;
  row.op = op;
  row.tokens = tokens;
  row.experts = m.experts;
  row.top_k = m.top_k;
  row.impl = impl_label(Impl::metrale_cpu);
  if (routing) {
    row.rows = routing->rows();
    row.experts_active = static_cast<int>(routing->active_experts.size());
    row.expert_rows = routing->rows_per_expert();
  }
  return row;
}

}  // namespace

HostTables host_tables(const ModelShape& m, Op op, const std::vector<std::int32_t>& experts,
                       ExpertCache& cache, std::uint64_t seed) {
  const bool gate_up = op == Op::gate_up;
  const int n = gate_up ? m.inter : m.hidden, k = gate_up ? m.hidden : m.inter;
  HostTables t;
  for (int p = 0; p < (gate_up ? 2 : 1); ++p) {
    t.packed[p].assign(m.experts, 0);
    t.sfb[p].assign(m.experts, 0);
    t.scale2[p].assign(m.experts, 1.0f);
    for (int e : experts) {
      auto it = cache.find({p, e});
      if (it == cache.end()) {
        it = cache
                 .emplace(std::pair{p, e},
                          quantize_expert(n, k, derive_seed(seed, static_cast<int>(op), p, e)))
                 .first;
      }
      t.packed[p][e] = reinterpret_cast<std::uintptr_t>(it->second.packed.data());
      t.sfb[p][e] = reinterpret_cast<std::uintptr_t>(it->second.sfb.data());
      t.scale2[p][e] = it->second.scale_2;
    }
  }
  return t;
}

std::vector<bf16_bits> grouped_activations(Op op, int a_rows, int k, std::uint64_t seed) {
  return normal_bf16(static_cast<std::size_t>(a_rows) * k,
                     derive_seed(seed, 0x616374, static_cast<int>(op)), 1.0f);
}

void run_grouped(const ModelShape& m, Op op, const Routing& r, ExpertCache& cache,
                 std::uint64_t seed, const BenchConfig& cfg, Row& row) {
  const bool gate_up = op == Op::gate_up;
  const int n = gate_up ? m.inter : m.hidden, k = gate_up ? m.hidden : m.inter;
  const int projections = gate_up ? 2 : 1;
  row.n = n;
  row.k = k;
  row.projections = projections;
  const HostTables tables = host_tables(m, op, r.active_experts, cache, seed);
  const int a_rows = gate_up ? r.tokens : r.rows();
  const std::vector<bf16_bits> a = grouped_activations(op, a_rows, k, seed);
  std::vector<bf16_bits> out[2];
  GroupedNvfp4 args{};
  args.a = a.data();
  args.a_rows = a_rows;
  args.token_ids = gate_up ? r.sorted_token_ids.data() : nullptr;
  for (int p = 0; p < projections; ++p) {
    out[p].resize(static_cast<std::size_t>(r.rows()) * n);
    args.proj[p] = tables.view(p);
    args.out[p] = out[p].data();
  }
  args.proj_count = projections;
  args.scale_layout = ScaleLayout::sfb;
  args.groups = expert_groups(r);
  args.n = n;
  args.k = k;
  row.stats = time_host([&] { check(nvfp4_grouped(args, kCpu)); }, cfg.budget_ms);
  row.work =
      grouped_work(static_cast<int>(r.active_experts.size()), projections, n, k, a_rows, r.rows());
  row.ok = true;
}

namespace {

void run_dense(const ModelShape& m, int tokens, const BenchConfig& cfg, Row& row) {
  const int n = 2 * m.inter, k = m.hidden;
  row.n = n;
  row.k = k;
  row.rows = tokens;
  const auto act =
      normal_bf16(static_cast<std::size_t>(tokens) * k, derive_seed(cfg.seed, 1), 1.0f);
  const auto weight =
      normal_bf16(static_cast<std::size_t>(n) * k, derive_seed(cfg.seed, 2), kWeightStddev);
  std::vector<bf16_bits> out(static_cast<std::size_t>(tokens) * n);
  const DenseGemm args{act.data(), weight.data(), out.data(), tokens, n, k};
  row.stats = time_host([&] { check(bf16_gemm_act_weight_t(args, kCpu)); }, cfg.budget_ms);
  row.work.flops = 2.0 * tokens * n * k;
  row.work.bytes = 2.0 * (static_cast<double>(n) * k + static_cast<double>(tokens) * k +
                          static_cast<double>(tokens) * n);
  row.ok = true;
}

// Op pack: the recipe form (scale_2 computed); op pack_unit: the seeds' form (scale_2 = 1).
void run_pack(const ModelShape& m, Op op, const BenchConfig& cfg, Row& row) {
  // One expert's gate+up weight: the CPU is the oracle, not a throughput target.
  const int n = 2 * m.inter, k = m.hidden;
  row.n = n;
  row.k = k;
  row.rows = n;
  row.note = fmt::format("one expert's gate_up weight, {}", pack_form(op));
  const auto weight =
      normal_bf16(static_cast<std::size_t>(n) * k, derive_seed(cfg.seed, 3), kWeightStddev);
  std::vector<std::uint8_t> packed(static_cast<std::size_t>(n) * (k / 2)),
      scale(static_cast<std::size_t>(n) * (k / 16));
  float scale_2 = 0;
  const PackNvfp4 args{
      weight.data(), packed.data(), scale.data(), op == Op::pack ? &scale_2 : nullptr, n, k};
  row.stats = time_host([&] { check(pack_bf16_weight_to_nvfp4_t(args, kCpu)); }, cfg.budget_ms);
  row.work.bytes = static_cast<double>(n) * k * (2.0 + 0.5625);
  row.ok = true;
}

}  // namespace

void run_cpu_bench(const BenchConfig& cfg, Report& report) {
  report.info.mode = "cpu";
  int total = 0;
  for (Op op : cfg.ops)
    total += static_cast<int>(cfg.models.size()) *
             (is_pack(op) ? 1 : static_cast<int>(cfg.tokens.size()));
  Progress progress(total);
  report.print_table_header();
  for (const ModelShape& m : cfg.models) {
    validate_model(m);
    std::map<Op, ExpertCache> caches;
    for (int tokens : cfg.tokens) {
      const Routing routing = route(tokens, m.experts, m.top_k, cfg.skew, cfg.seed);
      for (Op op : cfg.ops) {
        if (is_pack(op) && tokens != cfg.tokens.front()) continue;
        progress.step(fmt::format("{} {} T={} metrale-cpu", m.name, op_name(op), tokens));
        const std::size_t first = report.rows.size();
        if (op == Op::moe) {
          run_cpu_moe(m, tokens, caches, derive_seed(cfg.seed, 0x77), cfg, report);
          progress.clear();
          report.finish_group(first);
          continue;
        }
        Row row = base_row(m, op, tokens, op == Op::gate_up || op == Op::down ? &routing : nullptr);
        try {
          if (op == Op::gate_up || op == Op::down) {
            run_grouped(m, op, routing, caches[op], derive_seed(cfg.seed, 0x77), cfg, row);
          } else if (op == Op::dense) {
            run_dense(m, tokens, cfg, row);
          } else {
            run_pack(m, op, cfg, row);
          }
        } catch (const Error& e) {
          row.ok = false;
          row.error = e.what();
        }
        report.rows.push_back(std::move(row));
        progress.clear();
        report.finish_group(first);
      }
    }
  }
}

}  // namespace metrale::bench
