// Terminal table and JSON of a bench run (report.hpp).
#include "bench/report.hpp"

#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/config.hpp"
#include "core/error.hpp"

namespace metrale::bench {
namespace {

using ordered_json = nlohmann::ordered_json;

std::string fixed(double value, int digits) {
  return fmt::format("{:.{}f}", value, digits);
}

// Time in µs with three significant figures at most, so the column stays narrow.
std::string time_us(double us) {
  if (us >= 1000) return fixed(us, 0);
  if (us >= 100) return fixed(us, 1);
  return fixed(us, 2);
}

// Rates with two or three significant figures, so CPU-sized numbers do not print as 0.
std::string rate(double value) {
  if (value >= 100) return fixed(value, 0);
  if (value >= 10) return fixed(value, 1);
  if (value >= 0.01) return fixed(value, 2);
  return fmt::format("{:.1e}", value);
}

// The group's reference row compares its output with itself: its column says "ref" (its NaN
// count still shows), so a 0 never reads as an agreement that was not measured.
std::string check_text(const Row& row) {
  if (!row.check.done) return "";
  if (row.check.nan_count > 0) return fmt::format("NaN x{}", row.check.nan_count);
  if (row.check.against == kCheckReference) return "ref";
  return fmt::format("{:.1e}", row.check.rel_diff());
}

ordered_json stats_json(const Stats& s) {
  return ordered_json{{"median_us", s.median_us}, {"min_us", s.min_us},
                      {"p10_us", s.p10_us},       {"p90_us", s.p90_us},
                      {"max_us", s.max_us},       {"spread_pct", s.spread_pct()},
                      {"samples", s.samples},     {"iterations_per_sample", s.iterations},
                      {"timing", s.timing}};
}

ordered_json or_null(bool present, double value) {
  return present ? ordered_json(value) : ordered_json();
}

// No floor (a CPU run measures no ceilings): null, not a 0 that would plot as a number.
ordered_json floor_json(const Floor& f) {
  const bool has_floor = f.floor_us() > 0;
  return ordered_json{{"bytes_floor_us", or_null(has_floor, f.bytes_us)},
                      {"compute_floor_us", or_null(has_floor, f.compute_us)},
                      {"floor_us", or_null(has_floor, f.floor_us())}};
}

// What a row and a part have in common, after their status: why it did not run, the work, the
// floor, the statistics and % of floor (`rates`, e.g. a row's TFLOP/s and GB/s, before the last).
ordered_json measurement_json(const Measurement& m, const ordered_json& rates) {
  ordered_json j;
  if (!m.ok) j["error"] = m.error;
  j["flops"] = m.work.flops;
  j["bytes"] = m.work.bytes;
  j.update(floor_json(m.floor));
  if (m.ok) {
    j.update(stats_json(m.stats));
    j.update(rates);
    j["pct_floor"] = or_null(m.floor.floor_us() > 0, m.pct_floor());
  }
  return j;
}

ordered_json part_json(const GroupedPart& p) {
  ordered_json j{{"impl", p.impl}, {"status", p.ok ? "ok" : "error"}};
  j.update(measurement_json(p, ordered_json::object()));
  j["weight_copies"] = p.weight_copies;
  if (!p.kernel.empty()) j["kernel"] = p.kernel;
  if (!p.note.empty()) j["note"] = p.note;
  return j;
}

// Whether one layer call's launches meet issue 9's target.
bool meets_launch_target(const CallNodes& n) {
  return n.launches() <= kMoeLaunchTarget;
}

// What one layer call launched (null when not counted), and issue 9's target for it.
ordered_json launches_json(const CallNodes& n) {
  if (!n.counted()) return ordered_json();
  return ordered_json{{"kernels", n.kernels},
                      {"memsets", n.memsets},
                      {"other_nodes", n.others},
                      {"target", kMoeLaunchTarget},
                      {"meets_target", meets_launch_target(n)}};
}

// A moe row's own fields: the routing, the grouped calls on it, the ratio and its target.
ordered_json moe_json(const Row& r) {
  const MoeParts& m = r.moe;
  const double ratio = r.layer_over_grouped();
  return ordered_json{
      {"recipe", m.recipe},
      {"routing_source", m.routing_source},
      {"routing_slots_differing_from_cpu_oracle",
       m.slots_differing >= 0 ? ordered_json(m.slots_differing) : ordered_json()},
      {"out_nan_count", m.nan_outputs >= 0 ? ordered_json(m.nan_outputs) : ordered_json()},
      {"gate_up", part_json(m.gate_up)},
      {"down", part_json(m.down)},
      {"grouped_sum_us", or_null(m.grouped_us() > 0, m.grouped_us())},
      {"layer_over_grouped", or_null(ratio > 0, ratio)},
      {"target", moe_target(r.tokens)},
      {"meets_target", ratio > 0 ? ordered_json(ratio <= moe_target(r.tokens)) : ordered_json()},
      {"launches", launches_json(m.layer_nodes)}};
}

ordered_json row_json(const Row& r) {
  ordered_json j{{"model", r.model},
                 {"op", op_name(r.op)},
                 {"tokens", r.tokens},
                 {"rows", r.rows},
                 {"n", r.n},
                 {"k", r.k},
                 {"projections", r.projections},
                 {"experts", r.experts},
                 {"top_k", r.top_k},
                 {"experts_active", r.experts_active},
                 {"impl", r.impl},
                 {"status", r.ok ? "ok" : "error"}};
  if (!r.expert_rows.empty()) j["expert_rows"] = r.expert_rows;
  j.update(measurement_json(r, ordered_json{{"tflops", r.tflops()}, {"gbps", r.gbps()}}));
  j["weight_copies"] = r.weight_copies;
  ordered_json ratios = ordered_json::object();
  for (const auto& [impl, ratio] : r.time_ratio) ratios[impl] = ratio;
  j["time_ratio"] = ratios;  // this implementation's time over each other one's
  if (r.check.done) {
    j["check"] = ordered_json{{"against", r.check.against},
                              {"max_abs_diff", r.check.max_abs_diff},
                              {"max_abs_ref", r.check.max_abs_ref},
                              {"rel_diff", r.check.rel_diff()},
                              {"nan_count", r.check.nan_count}};
  }
  if (!r.note.empty()) j["note"] = r.note;
  if (!r.kernel.empty()) j["kernel"] = r.kernel;
  if (r.op == Op::moe) j["moe"] = moe_json(r);
  return j;
}

std::string part_text(const char* op, const GroupedPart& p) {
  if (!p.ok) return fmt::format("{} {} not run: {}", op, p.impl, p.error);
  const bool has_floor = p.floor.floor_us() > 0;
  return fmt::format(
      "{} {} {} us{}", op, p.impl, time_us(p.stats.median_us),
      has_floor ? fmt::format(" (floor {} us, {:.1f}%)", time_us(p.floor.floor_us()), p.pct_floor())
                : std::string());
}

// The two lines under a moe row: the grouped calls on its routing, then the ratio and target.
void print_moe_parts(const Row& r) {
  const MoeParts& m = r.moe;
  std::string line = fmt::format("    on {}: {}  +  {}", m.routing_source,
                                 part_text("gate_up", m.gate_up), part_text("down", m.down));
  if (m.grouped_us() > 0) line += fmt::format("  =  {} us", time_us(m.grouped_us()));
  fmt::print("{}\n", line);
  const double target = moe_target(r.tokens), ratio = r.layer_over_grouped();
  if (ratio <= 0) {
    fmt::print("    >>> layer / (gate_up + down): - ({} did not run)\n",
               r.ok ? "a grouped call" : "the layer");
    return;
  }
  fmt::print("    >>> layer / (gate_up + down) = {:.3f}   target <= {:.2f} at T {} 64: {}\n", ratio,
             target, r.tokens >= 64 ? ">=" : "<", ratio <= target ? "meets it" : "MISSES it");
  const CallNodes& n = m.layer_nodes;
  if (!n.counted()) return;
  fmt::print("    >>> launches a layer call: {} kernels + {} memsets{}   target <= {}: {}\n",
             n.kernels, n.memsets, n.others > 0 ? fmt::format(" (+ {} other nodes)", n.others) : "",
             kMoeLaunchTarget, meets_launch_target(n) ? "meets it" : "MISSES it");
}

}  // namespace

double Row::tflops() const {
  return ok && stats.median_us > 0 ? work.flops / stats.median_us / 1e6 : 0;
}
double Row::gbps() const {
  return ok && stats.median_us > 0 ? work.bytes / stats.median_us / 1e3 : 0;
}
double Measurement::pct_floor() const {
  return ok && stats.median_us > 0 ? 100.0 * floor.floor_us() / stats.median_us : 0;
}
double Row::layer_over_grouped() const {
  const double grouped = moe.grouped_us();
  return op == Op::moe && ok && grouped > 0 ? stats.median_us / grouped : 0;
}
double MoeParts::grouped_us() const {
  return gate_up.ok && down.ok ? gate_up.stats.median_us + down.stats.median_us : 0;
}
double moe_target(int tokens) {
  return tokens >= 64 ? 1.10 : 1.15;  // issue 9
}

std::string utc_now_iso8601() {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return text;
}

void Report::print_ceilings() const {
  if (!ceilings.measured) return;
  fmt::print("ceilings, measured in this run (median over samples, spread = p90-p10):\n");
  const auto line = [](const char* what, const Stats& s, const std::string& rate) {
    fmt::print("  {:<34} {:>9} us  +-{:>4.1f}%  {}\n", what, time_us(s.median_us), s.spread_pct(),
               rate);
  };
  line("read stream, 1 GiB (metrale)", ceilings.read,
       fmt::format("{:.0f} GB/s", ceilings.read_gbps));
  line("copy stream, 1 GiB each way (metrale)", ceilings.copy,
       fmt::format("{:.0f} GB/s (read + write)", ceilings.copy_gbps));
  line("bf16 GEMM 8192^3 (cuBLASLt)", ceilings.bf16,
       fmt::format("{:.0f} TFLOP/s", ceilings.bf16_tflops));
  fmt::print(
      "floor = max(bytes / read ceiling, 2*rows*N*K / bf16 ceiling); pack uses the copy "
      "ceiling. %floor = floor / time.\n\n");
}

void Report::print_table_header() const {
  fmt::print(
      "{:<14} {:<9} {:>6} {:>7} {:>4}  {:<22} {:>9} {:>6} {:>8} {:>7} {:>9} {:>6} {:>8} {:>8}\n",
      "model", "op", "T", "rows", "act", "impl", "median us", "+-%", "TFLOP/s", "GB/s", "floor us",
      "%floor", "metrale", "check");
  fmt::print(
      "{:<14} {:<9} {:>6} {:>7} {:>4}  {:<22} {:>9} {:>6} {:>8} {:>7} {:>9} {:>6} {:>8} {:>8}\n",
      "", "", "", "", "", "", "", "", "", "", "", "", "speedup", "rel diff");
}

void Report::finish_group(std::size_t first) {
  if (progress) progress->clear();
  const Row* ours = nullptr;
  for (std::size_t i = first; i < rows.size(); ++i) {
    if (rows[i].ok && (rows[i].impl == "metrale" || rows[i].impl == "metrale-cpu")) ours = &rows[i];
  }
  for (std::size_t i = first; i < rows.size(); ++i) {
    Row& r = rows[i];
    for (std::size_t j = first; j < rows.size(); ++j) {
      if (i == j || !r.ok || !rows[j].ok) continue;
      r.time_ratio.emplace_back(rows[j].impl, r.stats.median_us / rows[j].stats.median_us);
    }
  }
  for (std::size_t i = first; i < rows.size(); ++i) {
    const Row& r = rows[i];
    const bool grouped = r.op == Op::gate_up || r.op == Op::down || r.op == Op::moe;
    const std::string head =
        fmt::format("{:<14} {:<9} {:>6} {:>7} {:>4}  {:<22}", r.model, op_name(r.op),
                    is_pack(r.op) ? std::string("-") : std::to_string(r.tokens), r.rows,
                    grouped ? std::to_string(r.experts_active) : std::string("-"), r.impl);
    if (!r.ok) {
      fmt::print("{} not run: {}\n", head, r.error);
      if (r.op == Op::moe) print_moe_parts(r);
      continue;
    }
    const bool has_floor = r.floor.floor_us() > 0;
    const std::string speedup =
        ours && ours != &r ? fmt::format("{:.2f}x", r.stats.median_us / ours->stats.median_us)
                           : std::string();
    fmt::print("{} {:>9} {:>6.1f} {:>8} {:>7} {:>9} {:>6} {:>8} {:>8}{}\n", head,
               time_us(r.stats.median_us), r.stats.spread_pct(),
               r.work.flops > 0 ? rate(r.tflops()) : "-", rate(r.gbps()),
               has_floor ? time_us(r.floor.floor_us()) : "-",
               has_floor ? fixed(r.pct_floor(), 1) : "-", speedup, check_text(r),
               (r.kernel.empty() ? "" : "  " + r.kernel) + (r.note.empty() ? "" : "  " + r.note));
    if (r.op == Op::moe) print_moe_parts(r);
  }
  std::fflush(stdout);
  if (after_group) after_group();
}

void Report::write_json(const std::string& path, const BenchConfig& config, bool complete) const {
  ordered_json meta{{"tool", "metrale bench"}, {"version", info.version}, {"date", info.date},
                    {"commit", info.commit},   {"command", info.command}, {"mode", info.mode}};
  if (info.mode == "cuda") {
    meta["gpu"] = ordered_json{{"name", info.gpu_name},
                               {"compute_capability", info.compute_capability},
                               {"sms", info.sms},
                               {"memory_gib", info.memory_gib},
                               {"l2_mib", info.l2_mib}};
    meta["driver"] = info.driver;
    meta["cuda_runtime"] = info.cuda_runtime;
    meta["cuda_driver_api"] = info.cuda_driver_api;
    meta["cublaslt"] = info.cublaslt;
    meta["cutlass_arm"] = info.cutlass_arm;
  }
  meta["routing"] = ordered_json{{"seed", config.seed}, {"skew", config.skew}};
  meta["metrale_weights"] = config.weights != WeightLayout::prepacked ? "packed"
                            : core::prepacked_layout() == core::PrepackedLayout::fragments
                                ? "prepacked (fragment order)"
                                : "prepacked (halves)";
  meta["budget_ms_per_measurement"] = config.budget_ms;
  meta["notes"] = info.notes;
  if (!aborted.empty()) meta["aborted"] = aborted;
  meta["complete"] = complete;
  ordered_json doc{{"metadata", meta}};
  if (ceilings.measured) {
    doc["ceilings"] = ordered_json{
        {"read_gbps", ceilings.read_gbps},     {"copy_gbps", ceilings.copy_gbps},
        {"bf16_tflops", ceilings.bf16_tflops}, {"read", stats_json(ceilings.read)},
        {"copy", stats_json(ceilings.copy)},   {"bf16_8192", stats_json(ceilings.bf16)}};
  }
  ordered_json list = ordered_json::array();
  for (const Row& r : rows) list.push_back(row_json(r));
  doc["rows"] = list;
  const std::string part = path + ".part";
  {
    std::ofstream file(part, std::ios::trunc);
    file << doc.dump(1) << "\n";
    if (!file) fail(Status::invalid_argument, "bench: cannot write --json {}", part);
  }
  std::error_code error;
  std::filesystem::rename(part, path, error);
  if (error) fail(Status::invalid_argument, "bench: cannot write --json {}: {}", path, error.message());
}

}  // namespace metrale::bench
