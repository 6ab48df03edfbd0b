// The decode family's host side: what it refuses, which token width it takes, the workspace it
// carves, and the launches: table chunks past the first, the plan kernel, the main kernel; or,
// with host offsets and few experts holding rows, the work list planned here, the staging
// kernel and the host-planned main kernel.
#include <algorithm>
#include <cmath>
#include <type_traits>
#include <vector>

#include <fmt/format.h>

#include "cuda/cuda_check.hpp"
#include "cuda/family.hpp"
#include "cuda/sm90/decode/decode_plan.hpp"
#include "cuda/stage/stage_tables.hpp"
#include "cuda/stage/workspace_carve.hpp"
#include "format/fragment_order.hpp"

namespace metrale::cuda::sm90::decode {
namespace {

int k_tiles_of(int k) { return (k + kKTile - 1) / kKTile; }

// The mean rows an expert holds under uniform routing: what device offsets are planned for.
double uniform_mean_rows(const ExpertGroups& g) {
  return static_cast<double>(g.m_total) / std::max(1, g.num_experts);
}

// The width for a launch: the narrowest that at most one expert in kDecodeWideTileShare passes
// (those take a second token tile). With host offsets over the window's experts, and no wider
// than token_config's; with device offsets the row counts are unknown here, and under uniform
// routing an expert's rows are ~Poisson(m_total / experts), at most the caller's bound. Measured
// against the rule before, twice the mean (docs/perf.md, "2026-12-03, sixth session"): the layer
// at 24-25 rows an expert 0.73-0.93x the time (DeepSeek-V3 T = 768, gpt-oss T = 768, Qwen3-Next
// T = 1024 and 1280 took 32 tokens instead of 64), Qwen3-Next's grouped calls at T = 512 (10
// rows an expert) 0.92 / 0.95x (16 tokens instead of 32).
int width_config_for(const GroupedNvfp4& a, RowWindow window) {
  const ExpertGroups& g = a.groups;
  if (!g.offsets_on_device) {
    const WindowRows w = rows_in_window(g, window);
    const int by_mean = token_config(
        w.largest, w.experts ? static_cast<int>((w.rows + w.experts - 1) / w.experts) : 0);
    for (int i = 0; i < by_mean; ++i)
      if (few_pass_width(g, window, w.experts, kTokenWidths[i])) return i;
    return by_mean;
  }
  const int bound = std::min(g.max_rows_per_expert, window.max_rows);
  const double mean = uniform_mean_rows(g);
  for (int i = 0; i < kWidthCount; ++i)
    if (kTokenWidths[i] >= bound ||
        poisson_tail(mean, kTokenWidths[i]) * kDecodeWideTileShare <= 1.0)
      return i;
  return kWidthCount - 1;
}

// 128-row units for a launch `tokens` wide (a width with a 128-row configuration in
// decode_params.hpp) where it has many units: at least kWideUnitWaves waves of the resident grid at
// 128 rows, and more than kCompactExperts experts with rows (fewer: the host plans the launch's
// work list). Measured against 64-row units (H100, docs/perf.md, forty-first session): up to 16
// tokens, 0.84-0.98x the time on rows of 3.8-24 such waves (DeepSeek-V3, Qwen3 down, Qwen3-Next
// down and gpt-oss down at T = 64, Qwen3-Next at T = 512), level on two more (5.6 and 9.8 waves);
// slower on rows under 3 waves (Qwen3 gate_up T = 64 1.012x at 2.9, Qwen3-Next T = 8 1.03-1.12x at
// 1.2-2.3) and on every host-planned row (all of T = 8 on four presets: 1.00-1.24x at 0.5-5.9
// waves). At 32 tokens: DeepSeek-V3 T = 512 0.89 and 0.92x, gpt-oss 0.94 and 1.01x; Mixtral T = 64
// (8 experts) down 1.34x. With device offsets the experts holding rows in the window are expected,
// ~Poisson.
bool wide_units_pay(const GroupedNvfp4& a, RowWindow window, int tokens) {
  const ExpertGroups& g = a.groups;
  double experts = 0, token_tiles = 0;
  if (g.offsets_on_device) {
    // The experts whose rows fall in the launch's window (the narrow experts' launch holds about
    // half of them at 32 rows on average: Qwen3-30B's layer at T = 512), a token tile each.
    const double mean = uniform_mean_rows(g);
    const int top =
        std::min(window.max_rows, g.max_rows_per_expert > 0 ? g.max_rows_per_expert : g.m_total);
    experts = g.num_experts * (poisson_tail(mean, window.min_rows - 1) - poisson_tail(mean, top));
    token_tiles = experts;
  } else {
    experts = rows_in_window(g, window).experts;
    token_tiles = static_cast<double>(row_tiles_in_window(g, window, tokens));
  }
  // At most kCompactExperts: the host plans the launch (host offsets), or as few experts as it
  // would (device offsets: the MoE layer's Mixtral gate_up at T = 64, 8 experts, 1.04x the
  // layer's time with 128-row tiles).
  if (experts <= kCompactExperts) return false;
  const double units = token_tiles * a.proj_count * ((a.n + kMaxUnitRows - 1) / kMaxUnitRows);
  return units >= kWideUnitWaves * ctas_an_sm(tokens, kMaxUnitRows) * device_sm_count();
}

struct Layout {  // the workspace, carved in this order
  ExpertEntry* table;
  Segment* segments;
  std::int32_t* unit_first;
  PlanTotals* totals;
  std::uint32_t* counters;
  std::uint16_t* act;
  float* partials;
  std::size_t bytes;
};

int split_capacity() { return kSplitTilesPerSm * device_sm_count(); }

// The plan kernel's CTAs: CTA 0 plans (none in a host-planned launch's staging kernel), the
// others stage the activations (decode_plan.cu's stage_rest), a thread per staging_batch()
// 16-byte pieces of a group row; with the activations staged already (Plan::input_staged), a
// thread per split tile's counter.
int plan_grid(const Problem& problem, const Plan& plan, bool planned_on_host) {
  const GroupedNvfp4& a = problem.args;
  const long long pieces = 1LL * a.groups.m_total * k_tiles_of(a.k) * kPiecesPerKTile;
  const int per_thread = staging_batch(problem.glu.up != nullptr);
  const long long items =
      plan.input_staged ? split_capacity() : (pieces + per_thread - 1) / per_thread;
  const int planner = planned_on_host ? 0 : 1;
  return static_cast<int>(std::clamp<long long>((items + kPlanThreads - 1) / kPlanThreads + planner,
                                                1 + planner, 4LL * device_sm_count()));
}

Layout carve(const Problem& problem, const Plan& plan, void* base) {
  const GroupedNvfp4& a = problem.args;
  const std::size_t experts = static_cast<std::size_t>(a.groups.num_experts);
  const std::size_t capacity = static_cast<std::size_t>(split_capacity());
  // A split tile keeps at most (chunks x 8-token blocks) <= k_tiles / 16 + 8 partial slots of
  // 8 x (its weight rows) floats (decode_params.hpp's chunk rule).
  const std::size_t partial_floats =
      capacity * (k_tiles_of(a.k) / 16 + 8) * 8 * config_unit_rows(plan.config);
  WorkspaceCarve c(base);
  Layout l{};
  l.table = c.take<ExpertEntry>(experts * static_cast<std::size_t>(a.proj_count));
  l.segments = c.take<Segment>(experts);
  l.unit_first = c.take<std::int32_t>(experts + 1);
  l.totals = c.take<PlanTotals>(1);
  l.counters = c.take<std::uint32_t>(capacity);
  // The activation copy before the partials, whose size is the plan's: a call's second decode
  // launch reads the copy its first launch staged (Plan::input_staged) at the same offset.
  l.act = c.take<std::uint16_t>(static_cast<std::size_t>(a.groups.m_total) * act_stride(a.k));
  l.partials = c.take<float>(partial_floats);
  l.bytes = c.used();
  return l;
}

class DecodeFamily final : public Family {
 public:
  const char* name() const override { return "sm90-decode"; }
  int config_count() const override { return kConfigCount; }

  std::string describe(const Plan& plan) const override {
    const int rows = config_unit_rows(plan.config);
    return fmt::format("sm90-decode tokens={}{} splits={}", config_tokens(plan.config),
                       rows == kRows ? std::string() : fmt::format(" rows={}", rows),
                       plan.splits > 0 ? fmt::format("{}", plan.splits) : std::string("auto"));
  }

  static constexpr long long kMaxStagedPieces = 1LL << 30;  // int32 indices with room to step

  std::string why_not(const Problem& problem) const override {
    const GroupedNvfp4& a = problem.args;
    if (!problem.nvfp4) return "bf16 weights: the decode family streams NVFP4 weights only";
    if (a.k % kKMultiple != 0)
      return fmt::format("K = {} is not a multiple of {} (weight rows are copied in 16-byte "
                         "pieces of codes)",
                         a.k, kKMultiple);
    if (a.groups.num_experts > kMaxExperts)
      return fmt::format("num_experts = {} exceeds the decode family's limit of {} (its plan "
                         "kernel scans every expert in one CTA)",
                         a.groups.num_experts, kMaxExperts);
    // The staging kernel indexes the activation copy's 16-byte pieces in int32 (the dispatcher's
    // own budget keeps the copy to 256 MB; a forced launch does not ask it).
    const long long pieces = static_cast<long long>(a.groups.m_total) * act_stride(a.k) / 8;
    if (pieces > kMaxStagedPieces)
      return fmt::format(
          "the activation copy ({} rows of {} staged values) exceeds the staging "
          "kernel's {} 16-byte pieces",
          a.groups.m_total, act_stride(a.k), kMaxStagedPieces);
    return {};
  }

  Plan plan(const Problem& problem, RowWindow rows) const override {
    Plan plan;
    plan.rows = rows;
    plan.config = width_config_for(problem.args, rows);
    const int wide = wide_unit_config(plan.config);
    if (wide != plan.config && wide_units_pay(problem.args, rows, config_tokens(plan.config)))
      plan.config = wide;
    return plan;
  }

  std::size_t workspace_bytes(const Problem& problem, const Plan& plan) const override {
    return carve(problem, plan, nullptr).bytes;
  }

  // The plan kernel computes the gated rows into the activation copy it writes anyway.
  bool stages_glu_input(const Plan&) const override { return true; }

  // The main kernel's instantiation for the weights' codes; the fragment order also has the plan
  // and staging kernels keep K in natural order (stages_natural_k). Found once a launch: it reads
  // METRALE_PREPACKED_LAYOUT.
  static DecodeWeights weights_of(const GroupedNvfp4& a) {
    if (fragment_order(a))
      return a.k % format::kFragmentGroupCodes != 0 ? DecodeWeights::fragments_tail
                                                    : DecodeWeights::fragments;
    return prepacked(a) ? DecodeWeights::prepacked : DecodeWeights::packed;
  }

  void launch(const Problem& problem, const Plan& plan, core::Buffer ws,
              cudaStream_t stream) const override {
    const GroupedNvfp4& a = problem.args;
    const Layout l = carve(problem, plan, ws.ptr);
    // Per-thread scratch: a call allocates nothing on the host (the argument blocks are up to
    // ~25 KB).
    thread_local std::vector<int> listed;
    thread_local HostWork host_work;
    thread_local PlanArgs host_args;
    thread_local DevicePlanArgs device_args;
    listed.clear();
    const bool compact = list_active(a, plan.rows, listed);
    const int experts = compact ? static_cast<int>(listed.size()) : a.groups.num_experts;
    const DecodeWeights weights = weights_of(a);
    int ctas_per_sm = 0, shared_bytes = 0;
    METRALE_CUDA_CHECK(
        decode_occupancy(plan.config, weights, experts, compact, &ctas_per_sm, &shared_bytes));
    const PlanShape shape = plan_shape(problem, plan, l, experts, ctas_per_sm);
    const DecodeParams params = decode_params(problem, l, shape);
    if (compact) {
      plan_on_host(problem, shape, listed, host_work);
      if (host_work.units == 0) return;  // no expert of the window holds rows
      METRALE_CUDA_CHECK(
          launch_staging(shape, stages_natural_k(weights), plan_grid(problem, plan, true), stream));
      METRALE_CUDA_CHECK(launch_decode(plan.config, weights, params, &host_work,
                                       std::min(host_work.units, shape.grid), shared_bytes,
                                       stream));
      return;
    }
    const int grid = plan_grid(problem, plan, false);
    if (a.groups.offsets_on_device) {
      launch_general_plan(problem, shape, device_args, stages_natural_k(weights), grid, stream);
    } else {
      launch_general_plan(problem, shape, host_args, stages_natural_k(weights), grid, stream);
    }
    METRALE_CUDA_CHECK(
        launch_decode(plan.config, weights, params, nullptr, shape.grid, shared_bytes, stream));
  }

 private:
  // Host offsets with at most kCompactExperts experts holding rows in the window: their ids.
  static bool list_active(const GroupedNvfp4& a, RowWindow window, std::vector<int>& listed) {
    if (a.groups.offsets_on_device) return false;
    bool fits = true;
    for_each_in_window(a.groups, window, [&](int e, std::int32_t) {
      fits = fits && static_cast<int>(listed.size()) < kCompactExperts;
      if (fits) listed.push_back(e);
    });
    return fits;
  }

  // The plan kernel with the offsets and the table's first chunk in its parameters (the rest of
  // the table staged before it).
  template <class Args>
  static void launch_general_plan(const Problem& problem, const PlanShape& shape, Args& args,
                                  bool natural, int grid, cudaStream_t stream) {
    constexpr int kFirstChunk = decltype(args.chunk)::kExperts;
    if (shape.tables.num_experts > kFirstChunk)
      stage_tables(problem, kFirstChunk, nullptr, shape.tables, stream);
    args.shape = shape;
    fill_table_chunk(problem, 0, args.chunk);
    if constexpr (std::is_same_v<Args, PlanArgs>) {
      fill_host_offsets(problem, args.offsets);
    } else {
      args.offsets = problem.args.groups.offsets;
    }
    METRALE_CUDA_CHECK(launch_plan(args, natural, grid, stream));
  }

  // The listed experts' work list by the plan kernel's rule (decode_params.hpp's choose_splits
  // and expert_work), and their table: expert i of the list is entry i.
  static void plan_on_host(const Problem& problem, const PlanShape& s,
                           const std::vector<int>& listed, HostWork& w) {
    const GroupedNvfp4& a = problem.args;
    const int count = static_cast<int>(listed.size());
    const int tiles_per_token_tile = s.proj_count * s.n_tiles;
    auto rows_of = [&](int e) { return a.groups.offsets[e + 1] - a.groups.offsets[e]; };
    int total_tiles = 0, most_chunks = 1;
    for (int e : listed) {
      total_tiles += output_tiles(rows_of(e), s.tokens, tiles_per_token_tile);
      most_chunks = std::max(most_chunks, chunk_count(rows_of(e), s.k_tiles));
    }
    const int splits =
        choose_splits(total_tiles, most_chunks, s.grid, s.split_capacity, s.forced_splits);
    int tile = 0, unit = 0;
    std::int64_t partial = 0;
    for (int i = 0; i < count; ++i) {
      const int e = listed[i];
      const ExpertWork work =
          expert_work(rows_of(e), s.tokens, s.unit_rows, tiles_per_token_tile, s.k_tiles, splits);
      w.segment[i] = segment_of(i, a.groups.offsets[e], rows_of(e), work, tile, partial);
      w.unit_first[i] = unit;
      tile += work.tiles;
      unit += work.units;
      partial += work.partials;
      for (int p = 0; p < a.proj_count; ++p) w.entries[p][i] = expert_entry(problem, p, e);
    }
    w.unit_first[count] = unit;
    w.segments = count;
    w.units = unit;
  }

  static PlanShape plan_shape(const Problem& problem, const Plan& plan, const Layout& l,
                              int experts, int ctas_per_sm) {
    const GroupedNvfp4& a = problem.args;
    PlanShape s{};
    s.tables = StagedTables{l.table, nullptr, experts, a.proj_count};
    s.m_total = a.groups.m_total;
    s.proj_count = a.proj_count;
    s.tokens = config_tokens(plan.config);
    s.unit_rows = config_unit_rows(plan.config);
    s.n_tiles = (a.n + s.unit_rows - 1) / s.unit_rows;
    s.k_tiles = k_tiles_of(a.k);
    s.min_rows = plan.rows.min_rows;
    s.max_rows = plan.rows.max_rows;
    s.grid = std::max(1, ctas_per_sm) * device_sm_count();
    s.split_capacity = split_capacity();
    s.forced_splits = plan.splits;
    s.segments = l.segments;
    s.unit_first = l.unit_first;
    s.totals = l.totals;
    s.counters = l.counters;
    s.a = a.a;
    s.a_rows = a.a_rows;
    s.token_ids = a.token_ids;
    s.act = l.act;
    s.k = a.k;
    s.act_staged = plan.input_staged ? 1 : 0;
    s.glu = problem.glu;
    return s;
  }

  static DecodeParams decode_params(const Problem& problem, const Layout& l, const PlanShape& s) {
    const GroupedNvfp4& a = problem.args;
    DecodeParams p{};
    p.table = l.table;
    p.segments = l.segments;
    p.unit_first = l.unit_first;
    p.totals = l.totals;
    p.act = l.act;
    p.partials = l.partials;
    p.counters = l.counters;
    p.out[0] = a.out[0];
    p.out[1] = a.proj_count > 1 ? a.out[1] : nullptr;
    p.n = a.n;
    p.k = a.k;
    p.num_experts = s.tables.num_experts;
    p.proj_count = a.proj_count;
    p.n_tiles = FastDiv::of(static_cast<std::uint32_t>(s.n_tiles));
    p.scale_sfb = a.scale_layout == ScaleLayout::sfb;
    p.scale_vec16 = !p.scale_sfb && a.n % 16 == 0 && scales_aligned(problem, 16);
    p.max_segments = s.tables.num_experts;
    return p;
  }
};

}  // namespace

const Family& decode_family() {
  static const DecodeFamily family;
  return family;
}

}  // namespace metrale::cuda::sm90::decode
