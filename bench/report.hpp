// The rows of a bench run and how they are shown: a terminal table (one line per implementation,
// grouped by model, operation and token count) and a JSON document with every field plus the
// run's metadata (bench/plot.py reads it). Host only.
#pragma once

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "bench/bench_config.hpp"
#include "bench/measure.hpp"
#include "bench/progress.hpp"

namespace metrale::bench {

// An implementation's output compared with the group's reference output (metrale's when it ran).
// Check::against of the row whose output the others are compared with.
inline constexpr const char* kCheckReference = "(reference)";

struct Check {
  bool done = false;
  std::string against;
  double max_abs_diff = 0, max_abs_ref = 0;
  long long nan_count = 0;
  double rel_diff() const { return max_abs_ref > 0 ? max_abs_diff / max_abs_ref : max_abs_diff; }
};

// One implementation's measurement: a row's, or a part's of a moe row.
struct Measurement {
  std::string impl;  // the label: who produced the number
  bool ok = false;
  std::string error;  // why the implementation did not run
  Stats stats;
  Work work;
  Floor floor;
  int weight_copies = 0;  // rotated weight sets (cold L2)
  std::string note;
  std::string kernel;  // metrale and bf16-grouped rows: the kernels and configurations that ran
  double pct_floor() const;  // 100 · floor / time; 0 when no floor
};

// One of our grouped calls timed alone on a moe row's routing (op gate_up or op down, impl
// metrale): what the layer is compared with.
using GroupedPart = Measurement;

// What a moe row adds: the routing the layer chose, the grouped calls on it, and the target of
// issue 9: layer / (gate_up + down) <= 1.15 at every T, <= 1.10 at T >= 64.
struct MoeParts {
  std::string recipe;              // the model's routing and activation, in words
  std::string routing_source;      // whose routing the grouped calls ran on
  long long slots_differing = -1;  // the layer's topk_ids_out against the CPU oracle's (-1: n/a)
  long long nan_outputs = -1;      // NaN in the layer's output after its first call (-1: n/a)
  CallNodes layer_nodes;           // what one layer call launches (a captured graph's nodes)
  GroupedPart gate_up, down;
  double grouped_us() const;  // gate_up + down medians; 0 unless both ran
};
double moe_target(int tokens);
inline constexpr int kMoeLaunchTarget = 4;  // issue 9: at most 4 launches a layer call

// One (model, op, T, implementation): where it ran, and its measurement.
struct Row : Measurement {
  std::string model;
  Op op = Op::gate_up;
  int tokens = 0, rows = 0, n = 0, k = 0;  // n, k of one projection
  int experts = 0, top_k = 0, experts_active = 0, projections = 1;
  std::vector<int> expert_rows;  // grouped ops and moe: rows of each expert, in expert order
  Check check;
  std::vector<std::pair<std::string, double>> time_ratio;  // impl -> this time / its time
  MoeParts moe;                                            // op moe only

  double tflops() const;
  double gbps() const;  // minimal bytes over measured time
  // op moe: the layer's time over gate_up + down on the same routing; 0 unless all three ran.
  double layer_over_grouped() const;
};

struct RunInfo {
  std::string mode;  // "cuda" or "cpu"
  std::string date, commit, command, version;
  std::string gpu_name, compute_capability, driver, cuda_runtime, cuda_driver_api, cublaslt;
  std::string cutlass_arm;
  int sms = 0, l2_mib = 0;
  double memory_gib = 0;
  std::vector<std::string> notes;
};

class Report {
 public:
  RunInfo info;
  Ceilings ceilings;
  std::vector<Row> rows;
  Progress* progress = nullptr;  // cleared before a group is printed
  std::string aborted;           // why the run stopped early (a sticky CUDA error), or empty
  // Called after each group is printed: the bench rewrites its --json there, so that a run
  // stopped from outside (a time box) keeps the rows it measured.
  std::function<void()> after_group;

  void print_ceilings() const;
  void print_table_header() const;
  // Called once the implementations of one (model, op, T) group have run (rows[first..end)):
  // fills the cross-implementation ratios and prints the group.
  void finish_group(std::size_t first);
  // `complete`: false while the run goes on (metadata.complete); the file is replaced whole,
  // never left half written.
  void write_json(const std::string& path, const BenchConfig& config, bool complete = true) const;
};

std::string utc_now_iso8601();

}  // namespace metrale::bench
