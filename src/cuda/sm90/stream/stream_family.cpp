// The stream family's host side: which dense bf16 GEMMs it takes (a single GEMM of at most
// kMaxRows rows, K in whole 16-byte loads), the configuration for M, and the launch. It needs
// no workspace and no staging launch: one kernel a call.
#include <fmt/format.h>

#include "cuda/cuda_check.hpp"
#include "cuda/family.hpp"
#include "cuda/sm90/stream/stream_params.hpp"

namespace metrale::cuda::sm90::stream {
namespace {

class StreamFamily final : public Family {
 public:
  const char* name() const override { return "sm90-stream"; }
  int config_count() const override { return kConfigCount; }

  std::string describe(const Plan& plan) const override {
    return fmt::format("sm90-stream tokens={}", kTokenTiles[plan.config] * kTokensPerTile);
  }

  std::string why_not(const Problem& problem) const override {
    const GroupedNvfp4& a = problem.args;
    if (problem.nvfp4) return "NVFP4 weights: the stream family multiplies bf16 weights only";
    if (a.groups.num_experts != 1 || a.groups.offsets_on_device)
      return "a grouped problem: the stream family runs single GEMMs (one expert, host offsets)";
    if (a.groups.m_total > kMaxRows)
      return fmt::format("M = {} exceeds the stream family's {} rows", a.groups.m_total, kMaxRows);
    if (a.k % 8 != 0)
      return fmt::format("K = {} is not a multiple of 8 (rows are loaded 16 bytes at a time)", a.k);
    return {};
  }

  Plan plan(const Problem& problem, RowWindow rows) const override {
    Plan plan;
    plan.rows = rows;
    plan.config = config_for_rows(problem.args.groups.m_total);
    return plan;
  }

  std::size_t workspace_bytes(const Problem&, const Plan&) const override { return 0; }

  void launch(const Problem& problem, const Plan& plan, core::Buffer,
              cudaStream_t stream) const override {
    const GroupedNvfp4& a = problem.args;
    if (kTokenTiles[plan.config] * kTokensPerTile < a.groups.m_total)
      fail(Status::unsupported, "{}: configuration {} ({}) holds fewer than M = {} rows",
           problem.op, plan.config, describe(plan), a.groups.m_total);
    StreamParams p{};
    p.a = a.a;
    p.w = reinterpret_cast<const std::uint16_t*>(a.proj[0].packed_ptrs[0]);
    p.out = a.out[0];
    p.m = a.groups.m_total;
    p.n = a.n;
    p.k = a.k;
    METRALE_CUDA_CHECK(launch_stream(plan.config, p, stream));
  }
};

}  // namespace

const Family& stream_family() {
  static const StreamFamily family;
  return family;
}

}  // namespace metrale::cuda::sm90::stream
