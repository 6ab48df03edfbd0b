// Pieces of the CPU bench run (bench_runners.hpp's run_cpu_bench) that its row groups share: the
// CPU Exec, random host tensors, host-clock timing, the lazily quantized experts of a grouped op
// and their API tables, and the two kinds of grouped rows (cpu_bench.cpp) and the MoE layer's
// row (cpu_moe_bench.cpp).
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <utility>
#include <vector>

#include "bench/bench_config.hpp"
#include "bench/report.hpp"
#include "bench/routing.hpp"
#include "metrale/metrale.hpp"

namespace metrale::bench {

inline const Exec kCpu{Backend::cpu};

std::vector<bf16_bits> normal_bf16(std::size_t count, std::uint64_t seed, float stddev);

// Host-clock timing: one warm-up call, then calls until the budget is spent (at least 3).
Stats time_host(const std::function<void()>& call, double budget_ms);

// One projection of one expert, quantized with our packer, scales in the SFB layout.
struct HostExpert {
  std::vector<std::uint8_t> packed, sfb;
  float scale_2 = 1.0f;
};
// Lazily quantized experts of one (model, op): [projection][expert].
using ExpertCache = std::map<std::pair<int, int>, HostExpert>;

// The API tables of a grouped op's experts: `experts` quantized (made once, kept in `cache`), the
// others null.
struct HostTables {
  std::array<std::vector<std::uint64_t>, 2> packed, sfb;
  std::array<std::vector<float>, 2> scale2;
  ExpertWeights view(int projection) const;
};
HostTables host_tables(const ModelShape& m, Op op, const std::vector<std::int32_t>& experts,
                       ExpertCache& cache, std::uint64_t seed);

// The activations a grouped op reads ([a_rows, K]; gate_up: the tokens).
std::vector<bf16_bits> grouped_activations(Op op, int a_rows, int k, std::uint64_t seed);

// A gate_up or down row on routing `r`, its weights from `cache`, timed into `row`.
void run_grouped(const ModelShape& m, Op op, const Routing& r, ExpertCache& cache,
                 std::uint64_t seed, const BenchConfig& cfg, Row& row);

// The moe row of `tokens`: the layer, and the grouped calls on its routing (weights from the
// caches of gate_up and down, so that the ops share them).
void run_cpu_moe(const ModelShape& m, int tokens, std::map<Op, ExpertCache>& caches,
                 std::uint64_t seed, const BenchConfig& cfg, Report& report);

}  // namespace metrale::bench
