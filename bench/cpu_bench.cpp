// `metrale bench` without a GPU: the same sweep on the CPU reference backend, through the public
// API (Backend::cpu, host memory), timed on the host clock and labelled metrale-cpu. No ceilings
// are measured on the CPU, so rows carry no floor. Weights are quantized with our packer (the CPU
// pack, then the SFB swizzle) for the experts the routing activates; the others stay null, which
// the API accepts for experts without rows.
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
namespace {

const Exec kCpu{Backend::cpu};

std::vector<bf16_bits> normal_bf16(std::size_t count, std::uint64_t seed, float stddev) {
  std::vector<bf16_bits> out(count);
  for (std::size_t i = 0; i < count; ++i)
    out[i] = format::float_to_bf16(stddev * normal_at(seed, i));
  return out;
}

// One projection of one expert, quantized with our packer, scales in the SFB layout.
struct HostExpert {
  std::vector<std::uint8_t> packed, sfb;
  float scale_2 = 1.0f;
};

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

// Host-clock timing: one warm-up call, then calls until the budget is spent (at least 3).
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

// Lazily quantized experts of one (model, op): [projection][expert].
using ExpertCache = std::map<std::pair<int, int>, HostExpert>;

void run_grouped(const ModelShape& m, Op op, const Routing& r, ExpertCache& cache,
                 std::uint64_t seed, const BenchConfig& cfg, Row& row) {
  const bool gate_up = op == Op::gate_up;
  const int n = gate_up ? m.inter : m.hidden, k = gate_up ? m.hidden : m.inter;
  const int projections = gate_up ? 2 : 1;
  row.n = n;
  row.k = k;
  row.projections = projections;
  std::vector<std::uint64_t> packed[2], sfb[2];
  std::vector<float> scale2[2];
  for (int p = 0; p < projections; ++p) {
    packed[p].assign(m.experts, 0);
    sfb[p].assign(m.experts, 0);
    scale2[p].assign(m.experts, 1.0f);
    for (int e : r.active_experts) {
      auto it = cache.find({p, e});
      if (it == cache.end()) {
        it = cache
                 .emplace(std::pair{p, e},
                          quantize_expert(n, k, derive_seed(seed, static_cast<int>(op), p, e)))
                 .first;
      }
      packed[p][e] = reinterpret_cast<std::uintptr_t>(it->second.packed.data());
      sfb[p][e] = reinterpret_cast<std::uintptr_t>(it->second.sfb.data());
      scale2[p][e] = it->second.scale_2;
    }
  }
  const int a_rows = gate_up ? r.tokens : r.rows();
  const std::vector<bf16_bits> a =
      normal_bf16(static_cast<std::size_t>(a_rows) * k,
                  derive_seed(seed, 0x616374, static_cast<int>(op)), 1.0f);
  std::vector<bf16_bits> out[2];
  GroupedNvfp4 args{};
  args.a = a.data();
  args.a_rows = a_rows;
  args.token_ids = gate_up ? r.sorted_token_ids.data() : nullptr;
  for (int p = 0; p < projections; ++p) {
    out[p].resize(static_cast<std::size_t>(r.rows()) * n);
    args.proj[p] = ExpertWeights{packed[p].data(), sfb[p].data(), scale2[p].data()};
    args.out[p] = out[p].data();
  }
  args.proj_count = projections;
  args.scale_layout = ScaleLayout::sfb;
  args.groups = ExpertGroups{r.offsets.data(), false, m.experts, r.rows(), r.max_rows};
  args.n = n;
  args.k = k;
  row.stats = time_host([&] { check(nvfp4_grouped(args, kCpu)); }, cfg.budget_ms);
  row.work =
      grouped_work(static_cast<int>(r.active_experts.size()), projections, n, k, a_rows, r.rows());
  row.ok = true;
}

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

void run_pack(const ModelShape& m, const BenchConfig& cfg, Row& row) {
  // One expert's gate+up weight: the CPU is the oracle, not a throughput target.
  const int n = 2 * m.inter, k = m.hidden;
  row.n = n;
  row.k = k;
  row.rows = n;
  row.note = "one expert's gate_up weight";
  const auto weight =
      normal_bf16(static_cast<std::size_t>(n) * k, derive_seed(cfg.seed, 3), kWeightStddev);
  std::vector<std::uint8_t> packed(static_cast<std::size_t>(n) * (k / 2)),
      scale(static_cast<std::size_t>(n) * (k / 16));
  float scale_2 = 0;
  const PackNvfp4 args{weight.data(), packed.data(), scale.data(), &scale_2, n, k};
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
             (op == Op::pack ? 1 : static_cast<int>(cfg.tokens.size()));
  Progress progress(total);
  report.print_table_header();
  for (const ModelShape& m : cfg.models) {
    validate_model(m);
    std::map<Op, ExpertCache> caches;
    for (int tokens : cfg.tokens) {
      const Routing routing = route(tokens, m.experts, m.top_k, cfg.skew, cfg.seed);
      for (Op op : cfg.ops) {
        if (op == Op::pack && tokens != cfg.tokens.front()) continue;
        progress.step(fmt::format("{} {} T={} metrale-cpu", m.name, op_name(op), tokens));
        const std::size_t first = report.rows.size();
        Row row = base_row(m, op, tokens, op == Op::gate_up || op == Op::down ? &routing : nullptr);
        try {
          if (op == Op::gate_up || op == Op::down) {
            run_grouped(m, op, routing, caches[op], derive_seed(cfg.seed, 0x77), cfg, row);
          } else if (op == Op::dense) {
            run_dense(m, tokens, cfg, row);
          } else {
            run_pack(m, cfg, row);
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
