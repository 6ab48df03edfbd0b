// The stream family's host side (stream_params.hpp): which calls it takes, the configuration
// for their rows, and the one launch. It needs no workspace and no staging launch.
//   bf16 weights: a single GEMM of at most kMaxRows rows, K in whole 16-byte loads.
//   NVFP4 weights: host offsets, at most kStreamExperts experts with rows (listed in the
//   launch's parameters, as the decode family's host plan lists them), each at most
//   kNvfp4MaxRows rows; prepacked in the fragment order, K in whole 64-value groups.
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
  for (int e = 0; e < a.groups.num_experts; ++e) {
    const int rows = a.groups.offsets[e + 1] - a.groups.offsets[e];
    if (rows <= 0 || !window.contains(rows)) continue;
    if (x.count == kStreamExperts) return false;
    x.row_begin[x.count] = a.groups.offsets[e];
    x.rows[x.count] = rows;
    for (int p = 0; p < a.proj_count; ++p) x.entries[p][x.count] = expert_entry(problem, p, e);
    ++x.count;
  }
  return true;
}

class StreamFamily final : public Family {
 public:
  const char* name() const override { return "sm90-stream"; }
  int config_count() const override { return kConfigCount; }

  std::string describe(const Plan& plan) const override {
    return fmt::format("sm90-stream tokens={}", kConfigTokens[plan.config]);
  }

  std::string why_not(const Problem& problem) const override {
    return problem.nvfp4 ? why_not_nvfp4(problem) : why_not_bf16(problem);
  }

  Plan plan(const Problem& problem, RowWindow rows) const override {
    Plan plan;
    plan.rows = rows;
    plan.config = config_for_rows(problem.nvfp4 ? rows_in_window(problem.args.groups, rows).largest
                                                : problem.args.groups.m_total);
    return plan;
  }

  std::size_t workspace_bytes(const Problem&, const Plan&) const override { return 0; }

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
    if (a.groups.offsets_on_device)
      return "device offsets: the stream family lists its experts on the host";
    const WindowRows w = rows_in_window(a.groups, RowWindow{});
    if (w.experts > kStreamExperts)
      return fmt::format("{} experts hold rows, past the stream family's {}", w.experts,
                         kStreamExperts);
    if (w.largest > kNvfp4MaxRows)
      return fmt::format("an expert of {} rows, past the stream family's {} a launch", w.largest,
                         kNvfp4MaxRows);
    return {};
  }

  void require_holds(const Problem& problem, const Plan& plan, int rows, int most) const {
    if (rows > kConfigTokens[plan.config] || kConfigTokens[plan.config] > most)
      fail(Status::unsupported,
           "{}: configuration {} ({}) cannot hold {} rows (at most {} tokens for these weights)",
           problem.op, plan.config, describe(plan), rows, most);
  }

  void launch_bf16(const Problem& problem, const Plan& plan, cudaStream_t stream) const {
    const GroupedNvfp4& a = problem.args;
    require_holds(problem, plan, a.groups.m_total, kMaxRows);
    StreamParams p{};
    p.a = a.a;
    p.w = reinterpret_cast<const std::uint16_t*>(a.proj[0].packed_ptrs[0]);
    p.out = a.out[0];
    p.m = a.groups.m_total;
    p.n = a.n;
    p.k = a.k;
    METRALE_CUDA_CHECK(launch_stream(plan.config, p, stream));
  }

  void launch_nvfp4(const Problem& problem, const Plan& plan, cudaStream_t stream) const {
    const GroupedNvfp4& a = problem.args;
    thread_local StreamExperts experts;  // ~7 KB: per-thread scratch, no heap block per call
    if (!list_experts(problem, plan.rows, experts))
      fail(Status::unsupported, "{}: more than {} experts hold rows for the stream family",
           problem.op, kStreamExperts);
    if (experts.count == 0) return;
    require_holds(problem, plan, *std::max_element(experts.rows, experts.rows + experts.count),
                  kNvfp4MaxRows);
    Nvfp4StreamParams p{};
    p.a = a.a;
    p.token_ids = a.token_ids;
    p.a_rows = a.a_rows;
    p.out[0] = a.out[0];
    p.out[1] = a.proj_count > 1 ? a.out[1] : nullptr;
    p.n = a.n;
    p.k = a.k;
    p.proj_count = a.proj_count;
    p.row_blocks = (a.n + kNvfp4RowsPerCta - 1) / kNvfp4RowsPerCta;
    p.scale_sfb = a.scale_layout == ScaleLayout::sfb;
    METRALE_CUDA_CHECK(launch_stream_nvfp4(plan.config, p, experts, stream));
  }
};

}  // namespace

const Family& stream_family() {
  static const StreamFamily family;
  return family;
}

}  // namespace metrale::cuda::sm90::stream
