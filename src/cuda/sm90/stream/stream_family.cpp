// The stream family's host side (stream_params.hpp): which calls it takes, the configuration
// for their rows, and the one launch. It needs no workspace and no staging launch.
//   bf16 weights: a single GEMM of at most kMaxRows rows, K in whole 16-byte loads.
//   NVFP4 weights prepacked in the fragment order, K in whole 64-value groups: on host offsets
//   at most kStreamExperts experts with rows (listed in the launch's parameters, as the decode
//   family's host plan lists them), on device offsets at most kWideTableChunk experts (all in the
//   parameters); the token width sized for the largest expert (host) or the bound
//   (device), at most kNvfp4MaxRows: an expert past it takes its rows a tile at a time, the
//   weights streamed again for each. It takes no gated input (stages_glu_input: false): each of a
//   down's N / 16 row blocks would compute the activation of its K range again (measured in
//   docs/perf.md, twenty-eighth session). It writes the gated output instead (writes_glu_output):
//   a team streams a row block's gate and up items together, group by group on the same
//   activation fragments, and applies the activation to the two folded sums, so the MoE layer's
//   gate/up and activation are one launch.
#include <algorithm>

#include <fmt/format.h>

#include "cuda/cuda_check.hpp"
#include "cuda/family.hpp"
#include "cuda/sm90/stream/stream_params.hpp"
#include "cuda/stage/stage_tables.hpp"

namespace metrale::cuda::sm90::stream {
namespace {

// The experts of `window` with rows (host offsets), at most kStreamExperts; false past that.
bool list_experts(const Problem& problem, RowWindow window, StreamExperts& x) {
  const GroupedNvfp4& a = problem.args;
  x.count = 0;
  bool fits = true;
  for_each_in_window(a.groups, window, [&](int e, std::int32_t rows) {
    fits = fits && x.count < kStreamExperts;
    if (!fits) return;
    x.row_begin[x.count] = a.groups.offsets[e];
    x.rows[x.count] = rows;
    for (int p = 0; p < a.proj_count; ++p) x.entries[p][x.count] = expert_entry(problem, p, e);
    ++x.count;
  });
  return fits;
}

class StreamFamily final : public Family {
 public:
  const char* name() const override { return "sm90-stream"; }
  int config_count() const override { return kConfigCount; }

  std::string describe(const Plan& plan) const override {
    const StreamConfig& c = kConfigs[plan.config];
    if (plan.splits > 0)  // NVFP4: the warps of a team
      return fmt::format("sm90-stream tokens={} warps={}", c.tokens, plan.splits);
    return fmt::format("sm90-stream tokens={} bf16_rows={}", c.tokens, c.bf16_rows);
  }

  std::string why_not(const Problem& problem) const override {
    return problem.nvfp4 ? why_not_nvfp4(problem) : why_not_bf16(problem);
  }

  Plan plan(const Problem& problem, RowWindow rows) const override {
    Plan plan;
    plan.rows = rows;
    if (!problem.nvfp4) {
      plan.config = bf16_config(problem.args.groups.m_total, problem.args.n);
      return plan;
    }
    plan.config = config_for_rows(nvfp4_rows(problem, rows));
    plan.splits =
        auto_team(problem, plan.config,
                  team_runs(problem, item_count(problem.args, item_slots(problem, rows))));
    return plan;
  }

  std::size_t workspace_bytes(const Problem&, const Plan&) const override { return 0; }

  bool writes_glu_output(const Plan&) const override { return true; }

  void launch(const Problem& problem, const Plan& plan, core::Buffer,
              cudaStream_t stream) const override {
    if (problem.nvfp4) {
      launch_nvfp4(problem, plan, stream);
    } else {
      launch_bf16(problem, plan, stream);
    }
  }

 private:
  static std::string why_not_bf16(const Problem& problem) {
    const GroupedNvfp4& a = problem.args;
    if (a.groups.num_experts != 1 || a.groups.offsets_on_device)
      return "bf16 weights in a grouped problem: the stream family runs single bf16 GEMMs";
    if (a.groups.m_total > kMaxRows)
      return fmt::format("M = {} exceeds the stream family's {} rows", a.groups.m_total, kMaxRows);
    if (a.k % 8 != 0)
      return fmt::format("K = {} is not a multiple of 8 (rows are loaded 16 bytes at a time)", a.k);
    return {};
  }

  static std::string why_not_nvfp4(const Problem& problem) {
    const GroupedNvfp4& a = problem.args;
    if (!fragment_order(a))
      return "NVFP4 weights not prepacked in the fragment order: the stream family decodes that "
             "layout only";
    if (a.k % kNvfp4GroupK != 0)
      return fmt::format("K = {} is not a multiple of {} (whole fragment-order groups)", a.k,
                         kNvfp4GroupK);
    if (a.scale_layout != ScaleLayout::sfb && !scales_aligned(problem, 4))
      return "[K/16, N] block scales at a pointer not 4-byte aligned: the stream family copies "
             "them 4 bytes at a time";
    if (a.groups.offsets_on_device) {
      if (a.groups.num_experts > kWideTableChunk)
        return fmt::format(
            "num_experts = {} with device offsets, past the stream family's {} (every expert's "
            "entries travel in its parameters)",
            a.groups.num_experts, kWideTableChunk);
      return {};
    }
    const WindowRows w = rows_in_window(a.groups, RowWindow{});
    if (w.experts > kStreamExperts)
      return fmt::format("{} experts hold rows, past the stream family's {}", w.experts,
                         kStreamExperts);
    return {};
  }

  // The rows its token width is sized for: the largest expert's (host offsets) or the caller's
  // bound (device offsets), at most the widest NVFP4 configuration.
  static int nvfp4_rows(const Problem& problem, RowWindow window) {
    return std::clamp(rows_held(problem.args.groups, window).largest, 1, kNvfp4MaxRows);
  }

  void launch_bf16(const Problem& problem, const Plan& plan, cudaStream_t stream) const {
    const GroupedNvfp4& a = problem.args;
    if (kConfigs[plan.config].tokens < a.groups.m_total)
      fail(Status::unsupported, "{}: configuration {} ({}) cannot hold M = {} rows", problem.op,
           plan.config, describe(plan), a.groups.m_total);
    if (plan.splits > 0)
      fail(Status::unsupported,
           "{}: a split of {} on the stream family's bf16 kernel, whose CTA's 8 warps always share "
           "K (a split sets the NVFP4 kernel's team size only)",
           problem.op, plan.splits);
    StreamParams p{};
    p.a = a.a;
    p.w = static_cast<const std::uint16_t*>(expert_entry(problem, 0, 0).weight);
    p.out = a.out[0];
    p.m = a.groups.m_total;
    p.n = a.n;
    p.k = a.k;
    METRALE_CUDA_CHECK(launch_stream(plan.config, p, stream));
  }

  void launch_nvfp4(const Problem& problem, const Plan& plan, cudaStream_t stream) const {
    const GroupedNvfp4& a = problem.args;
    if (kConfigs[plan.config].tokens > kNvfp4MaxRows)
      fail(Status::unsupported, "{}: configuration {} ({}) is wider than NVFP4's {} tokens",
           problem.op, plan.config, describe(plan), kNvfp4MaxRows);
    Nvfp4StreamParams p{};
    p.a = a.a;
    p.token_ids = a.token_ids;
    p.a_rows = a.a_rows;
    p.m_total = a.groups.m_total;
    p.out[0] = a.out[0];
    p.out[1] = a.proj_count > 1 ? a.out[1] : nullptr;
    p.n = a.n;
    p.k = a.k;
    p.proj_count = a.proj_count;
    p.row_blocks = row_blocks(a.n);
    p.items_per_slot = FastDiv::of(static_cast<std::uint32_t>(a.proj_count * p.row_blocks));
    p.scale_sfb = a.scale_layout == ScaleLayout::sfb;
    p.glu_output = problem.glu_output;
    p.glu = problem.glu;
    // The work of `slots` experts, in runs a team takes at a time, on `work`'s experts.
    const auto launch_on = [&](const auto& work, int slots) {
      const int runs = static_cast<int>(team_runs(problem, items_of(problem, slots)));
      p.team_warps = launch_team(problem, plan, runs);
      METRALE_CUDA_CHECK(
          launch_stream_nvfp4(plan.config, p, work, runs, device_sm_count(), stream));
    };
    if (a.groups.offsets_on_device) {
      thread_local StreamTable table;  // ~25 KB: per-thread scratch, no heap block per call
      fill_table_chunk(problem, 0, table.chunk);
      table.offsets = a.groups.offsets;
      launch_on(table, item_slots(problem, plan.rows));
      return;
    }
    thread_local StreamExperts experts;  // ~7 KB: per-thread scratch, no heap block per call
    if (!list_experts(problem, plan.rows, experts))
      fail(Status::unsupported, "{}: more than {} experts hold rows for the stream family",
           problem.op, kStreamExperts);
    launch_on(experts, experts.count);
  }

  static int row_blocks(int n) { return (n + kNvfp4RowsPerCta - 1) / kNvfp4RowsPerCta; }

  // Work items of `slots` experts: their projections' row blocks.
  static long long item_count(const GroupedNvfp4& a, int slots) {
    return 1LL * slots * a.proj_count * row_blocks(a.n);
  }

  // The same, counted in an int for the launch.
  static int items_of(const Problem& problem, int slots) {
    const long long items = item_count(problem.args, slots);
    constexpr long long kMaxItems = 1LL << 30;  // item + grid stays an int
    if (items > kMaxItems)
      fail(Status::unsupported, "{}: {} work items of {} weight rows exceed {}", problem.op, items,
           kNvfp4RowsPerCta, kMaxItems);
    return static_cast<int>(items);
  }

  // What a team takes at a time out of `items`: a row block's gate and up items together when
  // it writes the gated output, else one item.
  static long long team_runs(const Problem& problem, long long items) {
    return problem.glu_output ? items / 2 : items;
  }

  // The experts that items are made for: those with rows in `window` (host offsets), or on
  // device offsets a bound, since no more experts than group rows can hold rows (the CTAs skip
  // items past the experts that have them).
  static int item_slots(const Problem& problem, RowWindow window) {
    return rows_held(problem.args.groups, window).experts;
  }

  // The team size for `runs` of work items (team_runs) of configuration `config` on this device.
  static int auto_team(const Problem& problem, int config, long long runs) {
    const GroupedNvfp4& a = problem.args;
    const long long resident_warps =
        1LL * stream_nvfp4_resident_ctas(config, a.groups.offsets_on_device, problem.glu_output) *
        device_sm_count() * kWarps;
    return team_warps(runs, a.k / kNvfp4GroupK, resident_warps);
  }

  // The launch's team size: the plan's (forced or the family's), or for a configuration forced
  // without one, the family's own for the launch's runs of items.
  static int launch_team(const Problem& problem, const Plan& plan, long long runs) {
    const int warps = plan.splits > 0 ? plan.splits : auto_team(problem, plan.config, runs);
    if (!valid_team_warps(warps))
      fail(Status::unsupported, "{}: {} warps sharing an item's K, expected 1, 2, 4 or 8",
           problem.op, warps);
    return warps;
  }
};

}  // namespace

const Family& stream_family() {
  static const StreamFamily family;
  return family;
}

}  // namespace metrale::cuda::sm90::stream
