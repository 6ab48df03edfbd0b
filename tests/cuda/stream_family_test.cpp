// The stream family (dense bf16 GEMMs of few rows, src/cuda/sm90/stream): every configuration
// forced against the CPU oracle, exact mode bit for bit and realistic mode within the derived
// tolerance, each case run twice by the harness (determinism) with NaN-poisoned outputs and guard
// bands: M at each configuration's edges, N off the 8-row CTA, K off the 32-value group and off
// an even split over the 8 warps (some warps with no K at all). Which GEMMs the dispatcher gives
// it, and what it refuses: host logic.
#include <string>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "cuda_test_support.hpp"

#ifdef METRALE_HAS_CUDA
#include "cuda/cuda_backend.hpp"
#include "cuda/family.hpp"
#include "cuda/sm90/stream/stream_params.hpp"
#endif

namespace metrale::cuda_test {
namespace {

#ifdef METRALE_HAS_CUDA

using cuda::sm90::stream::kConfigCount;
using cuda::sm90::stream::kTokensPerTile;
using cuda::sm90::stream::kTokenTiles;

constexpr const char* kStream = "sm90-stream";

// M at the edges of configuration `config`'s tokens, and one row.
std::vector<int> rows_for(int config) {
  switch (config) {
    case 0: return {1, 2, 7, 8, 9, 15, 16};
    case 1: return {1, 17, 31, 32};
    default: return {1, 33, 63, 64};
  }
}

// K: one lane's 8 values; a group and a half; 8 warps of one group each, plus one value tail;
// uneven ranges (65 groups: warps of 9, the last with 2); a long K.
constexpr int kStreamK[] = {8, 48, 264, 2080, 7168};
constexpr int kStreamN[] = {1, 7, 9, 200};

void sweep_config(int config, Mode mode) {
  int failures = 0;
  for (int m : rows_for(config))
    for (int n : kStreamN)
      for (int k : kStreamK) {
        check::Case c = gemm_case(Op::bf16_gemm, mode, m, n, k, 5000 + 97 * m + 13 * n + k);
        c.cuda_kernel = fmt::format("{}:{}", kStream, config);
        if (!expect_pass(c) && ++failures >= kMaxReportedFailures) return;
      }
}

TEST(StreamFamily, EveryConfigurationExact) {
  METRALE_SKIP_WITHOUT_GPU();
  for (int config = 0; config < kConfigCount; ++config) sweep_config(config, Mode::exact);
}

TEST(StreamFamily, EveryConfigurationRealistic) {
  METRALE_SKIP_WITHOUT_GPU();
  for (int config = 0; config < kConfigCount; ++config) sweep_config(config, Mode::realistic);
}

// A configuration that holds fewer rows than M is refused with its reason, nothing launched.
TEST(StreamFamily, ConfigurationTooNarrowIsRefused) {
  METRALE_SKIP_WITHOUT_GPU();
  check::Case c = gemm_case(Op::bf16_gemm, Mode::exact, kTokensPerTile + 1, 8, 64, 5100);
  c.cuda_kernel = fmt::format("{}:0", kStream);
  const check::Report r = check::run_case(c);
  EXPECT_FALSE(r.passed());
  EXPECT_NE(r.detail.find("fewer than M = 17"), std::string::npos) << r.detail;
}

cuda::Problem dense_bf16(const std::int32_t (&offsets)[2], int n, int k) {
  cuda::Problem problem;
  problem.nvfp4 = false;
  problem.args.groups = ExpertGroups{offsets, false, 1, offsets[1], offsets[1]};
  problem.args.n = n;
  problem.args.k = k;
  problem.args.proj_count = 1;
  return problem;
}

// What it refuses, each with the value named. Host logic.
TEST(StreamFamily, RefusalsSayWhy) {
  const cuda::Family* stream = cuda::find_family(kStream);
  ASSERT_NE(stream, nullptr);
  const std::int32_t small[2] = {0, 4}, large[2] = {0, cuda::sm90::stream::kMaxRows + 1};
  EXPECT_EQ(stream->why_not(dense_bf16(small, 64, 64)), "");
  cuda::Problem nvfp4 = dense_bf16(small, 64, 64);
  nvfp4.nvfp4 = true;
  EXPECT_NE(stream->why_not(nvfp4).find("bf16 weights only"), std::string::npos);
  cuda::Problem grouped = dense_bf16(small, 64, 64);
  grouped.args.groups.offsets_on_device = true;
  EXPECT_NE(stream->why_not(grouped).find("single GEMMs"), std::string::npos);
  EXPECT_NE(stream->why_not(dense_bf16(large, 64, 64)).find("M = 65"), std::string::npos);
  EXPECT_NE(stream->why_not(dense_bf16(small, 64, 36)).find("K = 36"), std::string::npos);
  EXPECT_EQ(stream->describe(stream->plan(dense_bf16(small, 64, 64), cuda::RowWindow{})),
            "sm90-stream tokens=16");
}

// The dispatcher gives a dense bf16 GEMM of up to kStreamMaxRows rows to the stream family, the
// larger ones to the tiled family (bf16_gemm_plan: the bench's label). Host logic.
TEST(StreamFamily, DispatcherTakesFewRowsOfBf16) {
  for (int m : {1, 8, 16, 17, 32, 64, 512}) {
    const std::string label = cuda::bf16_gemm_plan(m, 1536, 2048);
    EXPECT_EQ(label.starts_with("sm90-stream"), m <= cuda::kStreamMaxRows) << m << ": " << label;
  }
}

#endif

}  // namespace
}  // namespace metrale::cuda_test
