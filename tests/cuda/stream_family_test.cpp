// The stream family (src/cuda/sm90/stream): every configuration forced against the CPU oracle,
// exact mode bit for bit and realistic mode within the derived tolerance, each case run twice by
// the harness (determinism) with NaN-poisoned outputs and guard bands.
//   bf16 (dense GEMMs): M at each configuration's edges, N off the 8-row CTA, K off the 32-value
//   group and off an even split over the 8 warps (some warps with no K at all).
//   NVFP4 (grouped, prepacked in the fragment order, host and device offsets): routings of 0 to
//   96 rows an expert (past 32: several token tiles), up to 256 experts with few holding rows,
//   both scale layouts (gate_up's [K/16, N], the others' SFB), the fused call's gather, N off the
//   16-row CTA, K of 1 to 32 groups. The MoE layer with the family forced: moe_check_test.cpp.
// Every team size (the warps sharing an NVFP4 item's K) forced on the same shapes.
// Which calls the dispatcher gives it, what it refuses, the team size it picks: host logic.
#include <string>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "cuda_test_support.hpp"

#ifdef METRALE_HAS_CUDA
#include "core/error.hpp"
#include "cuda/cuda_backend.hpp"
#include "cuda/family.hpp"
#include "cuda/sm90/stream/stream_params.hpp"
#endif

namespace metrale::cuda_test {
namespace {

#ifdef METRALE_HAS_CUDA

using cuda::sm90::stream::kConfigCount;
using cuda::sm90::stream::kConfigs;

constexpr const char* kStream = "sm90-stream";

// M at the edges of configuration `config`'s width (past the next narrower one), and one row.
std::vector<int> rows_for(int config) {
  const int tokens = kConfigs[config].tokens;
  return {1, tokens / 2 + 1, tokens - 1, tokens};
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

TEST(StreamFamily, EveryBf16ConfigurationExact) {
  METRALE_SKIP_WITHOUT_GPU();
  for (int config = 0; config < kConfigCount; ++config) sweep_config(config, Mode::exact);
}

TEST(StreamFamily, EveryBf16ConfigurationRealistic) {
  METRALE_SKIP_WITHOUT_GPU();
  for (int config = 0; config < kConfigCount; ++config) sweep_config(config, Mode::realistic);
}

// NVFP4 grouped shapes the family takes: N x K and a routing (tokens, experts, top-k).
std::vector<GroupedShape> nvfp4_shapes() {
  using check::RoutingKind;
  return {
      {64, 64, {1, 8, 2, RoutingKind::uniform}},        // one token: two experts of 1 row
      {200, 2048, {8, 16, 4, RoutingKind::uniform}},    // 32 groups: 4 a warp
      {72, 192, {16, 8, 2, RoutingKind::skew}},         // N off the CTA, 3 groups: 5 warps idle
      {64, 64, {0, 4, 2, RoutingKind::uniform}},        // no rows at all
      {136, 128, {12, 8, 2, RoutingKind::one_expert}},  // one expert of 24 rows
      {8, 640, {4, 256, 8, RoutingKind::skew}},         // 256 experts, few with rows; N < 16
      {64, 64, {16, 8, 1, RoutingKind::empty_expert}}, {1, 64, {3, 4, 2, RoutingKind::uniform}},
      {72, 192, {48, 8, 2, RoutingKind::one_expert}},  // 96 rows on one expert: 3 token tiles
  };
}

void sweep_nvfp4(Mode mode, const std::string& kernel) {
  int failures = 0;
  std::uint64_t seed = 5300;
  for (Op op : {Op::grouped_gate_up, Op::grouped_gate_up_fused, Op::grouped_down})
    if (!sweep_grouped_shapes(op, mode, nvfp4_shapes(), kernel, true, seed, failures)) return;
}

TEST(StreamFamily, Nvfp4GroupedExact) {
  METRALE_SKIP_WITHOUT_GPU();
  sweep_nvfp4(Mode::exact, kStream);
}

TEST(StreamFamily, Nvfp4GroupedRealistic) {
  METRALE_SKIP_WITHOUT_GPU();
  sweep_nvfp4(Mode::realistic, kStream);
}

// The narrowest and the widest NVFP4 configurations (8 and 32 tokens) forced on every shape: up
// to 12 token tiles an expert, and rows mostly short of the width.
TEST(StreamFamily, Nvfp4NarrowestAndWidestConfigurationsExact) {
  METRALE_SKIP_WITHOUT_GPU();
  for (int rows : {1, cuda::sm90::stream::kNvfp4MaxRows})
    sweep_nvfp4(Mode::exact,
                fmt::format("{}:{}", kStream, cuda::sm90::stream::config_for_rows(rows)));
}

// Every team size forced (the warps sharing an item's K: 1, 2, 4 and 8) on the narrowest and
// the widest NVFP4 configurations (8 tokens, one n8 tile; 32, four): a lone warp's sums stored
// straight from its accumulators, teams folding through shared memory (the 32-token kernel's
// four tiles in one chunk), team members with no K (K of 1 to 3 groups); a size of 3 refused.
TEST(StreamFamily, Nvfp4EveryTeamSizeExact) {
  METRALE_SKIP_WITHOUT_GPU();
  for (int rows : {1, cuda::sm90::stream::kNvfp4MaxRows})
    for (int warps : {1, 2, 4, 8})
      sweep_nvfp4(Mode::exact, fmt::format("{}:{}:{}", kStream,
                                           cuda::sm90::stream::config_for_rows(rows), warps));
  check::Case c = grouped_case(Op::grouped_down, Mode::exact, 64, 128,
                               {4, 8, 2, check::RoutingKind::uniform}, 5400);
  c.prepacked = true;
  c.cuda_kernel = fmt::format("{}:0:3", kStream);
  const check::Report r = check::run_case(c);
  EXPECT_FALSE(r.passed());
  EXPECT_NE(r.detail.find("3 warps sharing an item's K"), std::string::npos) << r.detail;
}

// A configuration that holds fewer rows than M, and a forced split on bf16 weights, are refused
// with their reasons, nothing launched.
TEST(StreamFamily, ConfigurationTooNarrowIsRefused) {
  METRALE_SKIP_WITHOUT_GPU();
  check::Case c = gemm_case(Op::bf16_gemm, Mode::exact, kConfigs[0].tokens + 1, 8, 64, 5100);
  c.cuda_kernel = fmt::format("{}:0", kStream);
  const check::Report r = check::run_case(c);
  EXPECT_FALSE(r.passed());
  EXPECT_NE(r.detail.find("cannot hold M = 9 rows"), std::string::npos) << r.detail;
  // A forced split names the NVFP4 kernel's team size: on bf16 weights it is refused.
  c = gemm_case(Op::bf16_gemm, Mode::exact, 4, 8, 64, 5101);
  c.cuda_kernel = fmt::format("{}:0:2", kStream);
  const check::Report split = check::run_case(c);
  EXPECT_FALSE(split.passed());
  EXPECT_NE(split.detail.find("a split of 2 on the stream family's bf16 kernel"), std::string::npos)
      << split.detail;
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

// An NVFP4 problem on host offsets (`offsets` must outlive it), prepacked weights.
cuda::Problem grouped_nvfp4(const std::vector<std::int32_t>& offsets, int n, int k) {
  cuda::Problem problem;
  problem.args.groups =
      ExpertGroups{offsets.data(), false, static_cast<std::int32_t>(offsets.size()) - 1,
                   offsets.back(), offsets.back()};
  problem.args.n = n;
  problem.args.k = k;
  problem.args.proj_count = 2;
  problem.args.weight_layout = WeightLayout::prepacked;
  problem.args.scale_layout = ScaleLayout::sfb;
  return problem;
}

// What it refuses, each with the value named. Host logic.
TEST(StreamFamily, RefusalsSayWhy) {
  const cuda::Family* stream = cuda::find_family(kStream);
  ASSERT_NE(stream, nullptr);
  const std::int32_t small[2] = {0, 4}, large[2] = {0, cuda::sm90::stream::kMaxRows + 1};
  EXPECT_EQ(stream->why_not(dense_bf16(small, 64, 64)), "");
  EXPECT_EQ(stream->describe(stream->plan(dense_bf16(small, 64, 64), cuda::RowWindow{})),
            "sm90-stream tokens=8 bf16_rows=8");
  cuda::Problem grouped = dense_bf16(small, 64, 64);
  grouped.args.groups.offsets_on_device = true;
  EXPECT_NE(stream->why_not(grouped).find("single bf16 GEMMs"), std::string::npos);
  EXPECT_NE(stream->why_not(dense_bf16(large, 64, 64)).find("M = 65"), std::string::npos);
  EXPECT_NE(stream->why_not(dense_bf16(small, 64, 36)).find("K = 36"), std::string::npos);

  const std::vector<std::int32_t> few{0, 3, 3, 20};  // experts of 3, 0 and 17 rows
  EXPECT_EQ(stream->why_not(grouped_nvfp4(few, 64, 128)), "");
  // The team size follows the device's resident warps (team_warps: TeamSizeFollowsItemsAndK).
  EXPECT_TRUE(stream->describe(stream->plan(grouped_nvfp4(few, 64, 128), cuda::RowWindow{}))
                  .starts_with("sm90-stream tokens=32 warps="));
  cuda::Problem packed = grouped_nvfp4(few, 64, 128);
  packed.args.weight_layout = WeightLayout::packed;
  EXPECT_NE(stream->why_not(packed).find("fragment order"), std::string::npos);
  EXPECT_NE(stream->why_not(grouped_nvfp4(few, 64, 96)).find("K = 96"), std::string::npos);
  // [K/16, N] scales are copied in 4-byte words: their pointers must be 4-byte aligned.
  cuda::Problem k16 = grouped_nvfp4(few, 64, 128);
  k16.args.scale_layout = ScaleLayout::k16_by_n;
  const std::uint64_t words[3] = {0x1000, 0x2004, 0x3008}, odd[3] = {0x1000, 0x2002, 0x3008};
  for (int p = 0; p < 2; ++p) k16.args.proj[p].scale_ptrs = words;
  EXPECT_EQ(stream->why_not(k16), "");
  k16.args.proj[1].scale_ptrs = odd;
  EXPECT_NE(stream->why_not(k16).find("not 4-byte aligned"), std::string::npos);
  // Device offsets: every expert's entries travel in the parameters; the width from the bound.
  std::vector<std::int32_t> wide_table(cuda::kWideTableChunk + 2, 0);
  cuda::Problem on_device = grouped_nvfp4(wide_table, 64, 128);
  on_device.args.groups.offsets_on_device = true;
  on_device.args.groups.max_rows_per_expert = 5;
  EXPECT_NE(stream->why_not(on_device).find("num_experts = 513"), std::string::npos);
  on_device.args.groups.num_experts = cuda::kWideTableChunk;
  EXPECT_EQ(stream->why_not(on_device), "");
  EXPECT_TRUE(stream->describe(stream->plan(on_device, cuda::RowWindow{}))
                  .starts_with("sm90-stream tokens=8 warps="));
  // An expert past the widest NVFP4 width takes its rows a tile at a time.
  const std::vector<std::int32_t> wide{0, 40};
  EXPECT_EQ(stream->why_not(grouped_nvfp4(wide, 64, 128)), "");
  EXPECT_TRUE(stream->describe(stream->plan(grouped_nvfp4(wide, 64, 128), cuda::RowWindow{}))
                  .starts_with("sm90-stream tokens=32 warps="));
  std::vector<std::int32_t> many{0};
  for (int e = 0; e < cuda::sm90::stream::kStreamExperts + 1; ++e) many.push_back(e + 1);
  EXPECT_NE(stream->why_not(grouped_nvfp4(many, 64, 128)).find("129 experts hold rows"),
            std::string::npos);
}

// The dispatcher gives a dense bf16 GEMM of up to kStreamMaxBf16Rows rows to the stream family, the
// larger ones to the tiled family (bf16_gemm_plan: the bench's label), on gpt-oss's shape, too
// wide for the small GEMMs' rule below. Host logic.
TEST(StreamFamily, DispatcherTakesFewRowsOfBf16) {
  for (int m : {1, 8, 16, 17, 32, 33, 64, 512}) {
    const std::string label = cuda::bf16_gemm_plan(m, 5760, 2880);
    EXPECT_EQ(label.starts_with("sm90-stream"), m <= cuda::kStreamMaxBf16Rows)
        << m << ": " << label;
  }
}

// Up to 64 rows, a GEMM whose N / 16 CTAs fit one to an SM, each streaming at most
// kStreamSmallBf16CtaBytes of weights (K <= 2048), goes to the stream family's 64 x 16
// configuration; past either bound, or past 64 rows, to the tiled family. Host logic (132 SMs
// where no device answers).
TEST(StreamFamily, DispatcherTakesSmallBf16GemmsUpTo64Rows) {
  const auto stream_runs = [](int m, int n, int k) {
    return cuda::bf16_gemm_plan(m, n, k).starts_with("sm90-stream");
  };
  for (int m : {33, 48, 64}) {
    EXPECT_TRUE(stream_runs(m, 1536, 2048)) << m << ": " << cuda::bf16_gemm_plan(m, 1536, 2048);
    EXPECT_EQ(cuda::bf16_gemm_plan(m, 1024, 2048), "sm90-stream tokens=64 bf16_rows=16");
    EXPECT_TRUE(stream_runs(m, 16 * 132, 1536)) << m;   // one CTA an SM
    EXPECT_FALSE(stream_runs(m, 16 * 133, 1536)) << m;  // one past
    EXPECT_FALSE(stream_runs(m, 1024, 2056)) << m;      // a CTA's rows past 64 KiB
    EXPECT_FALSE(stream_runs(m, 512, 8192)) << m;
    EXPECT_FALSE(stream_runs(m, 4096, 7168)) << m;  // DeepSeek-V3's
  }
  EXPECT_FALSE(stream_runs(65, 1024, 2048));
}

// The dispatcher gives the stream family an NVFP4 call of one row an expert whose weights weigh at
// most kStreamMaxNvfp4Bytes, or on device offsets one of at most kStreamMaxNvfp4DeviceRows rows an
// expert and kStreamMaxNvfp4DeviceProjectionBytes a projection, the decode family the rest
// (family.hpp). Host logic.
TEST(StreamFamily, DispatcherTakesSmallNvfp4Calls) {
  // Whether the dispatcher's launches for `a` start with `family`'s, naming them if not.
  const auto chosen = [](const GroupedNvfp4& a, const char* family) {
    const std::string label = cuda::nvfp4_grouped_plan(a);
    if (label.starts_with(family)) return ::testing::AssertionSuccess();
    return ::testing::AssertionFailure() << label;
  };
  const auto host = [](const std::vector<std::int32_t>& offsets, int n, int k) {
    return grouped_nvfp4(offsets, n, k).args;
  };
  const std::vector<std::int32_t> ones{0, 1, 1, 2, 3}, two{0, 1, 3, 4};
  // Three experts with rows: 3 x 2 x 768 x 2048 x 9/16 = 5.3 MB; 3 x 2 x 4096 x 8192 x 9/16 = 113.
  EXPECT_TRUE(chosen(host(ones, 768, 2048), "sm90-stream"));
  EXPECT_TRUE(chosen(host(ones, 4096, 8192), "sm90-decode"));
  EXPECT_TRUE(chosen(host(two, 768, 2048), "sm90-decode"));
  // The bound: one expert at K = 8192, N the largest multiple of 64 within kStreamMaxNvfp4Bytes,
  // then 64 rows more.
  const std::vector<std::int32_t> one{0, 1};
  const int n_at_bound =
      static_cast<int>(cuda::kStreamMaxNvfp4Bytes * 16 / (2 * 9 * 8192)) / 64 * 64;
  EXPECT_TRUE(chosen(host(one, n_at_bound, 8192), "sm90-stream"));
  EXPECT_TRUE(chosen(host(one, n_at_bound + 64, 8192), "sm90-decode"));
  // Device offsets: as many experts as the rows could reach, each at most the caller's bound.
  GroupedNvfp4 a = host(ones, 768, 2048);
  a.groups = ExpertGroups{nullptr, true, 128, 8, 1};
  EXPECT_TRUE(chosen(a, "sm90-stream"));
  a.groups = ExpertGroups{nullptr, true, 128, 32, cuda::kStreamMaxNvfp4DeviceRows};  // 27 MiB
  EXPECT_TRUE(chosen(a, "sm90-stream"));
  a.groups.max_rows_per_expert = cuda::kStreamMaxNvfp4DeviceRows + 1;
  EXPECT_TRUE(chosen(a, "sm90-decode"));
  a.groups = ExpertGroups{nullptr, true, 128, 128, 1};  // 128 x 0.84 MiB a projection
  EXPECT_TRUE(chosen(a, "sm90-decode"));
  // gpt-oss-120b's gate/up at T = 1 (4 x 9.3 MB): past the host offsets' bound, within the
  // device offsets'; at T = 2 (8 experts, 35.6 MiB a projection) within it too, at T = 3 not.
  const std::vector<std::int32_t> gpt_oss{0, 1, 2, 3, 4};
  EXPECT_TRUE(chosen(host(gpt_oss, 2880, 2880), "sm90-decode"));
  a.n = a.k = 2880;
  a.groups = ExpertGroups{nullptr, true, 128, 4, 1};
  EXPECT_TRUE(chosen(a, "sm90-stream"));
  a.groups = ExpertGroups{nullptr, true, 128, 8, 2};
  EXPECT_TRUE(chosen(a, "sm90-stream"));
  a.groups = ExpertGroups{nullptr, true, 128, 12, 3};
  EXPECT_TRUE(chosen(a, "sm90-decode"));
  // Down takes the bound a projection as gate/up does: gpt-oss's at T = 2 and 3 as above.
  a.proj_count = 1;
  a.groups = ExpertGroups{nullptr, true, 128, 8, 2};
  EXPECT_TRUE(chosen(a, "sm90-stream"));
  a.groups = ExpertGroups{nullptr, true, 128, 12, 3};
  EXPECT_TRUE(chosen(a, "sm90-decode"));
  // DeepSeek-V3's down at T = 1 (8 x 7168 x 2048 x 9/16 = 63 MiB): past the device offsets' bound.
  a.n = 7168;
  a.k = 2048;
  a.groups = ExpertGroups{nullptr, true, 256, 8, 1};
  EXPECT_TRUE(chosen(a, "sm90-decode"));
  a.groups.m_total = 4;  // 31.5 MiB
  EXPECT_TRUE(chosen(a, "sm90-stream"));
}

// Host logic: only the stream family applies the MoE layer's activation to gate/up's sums (the
// layer's T = 1 path: MoeLayer.StreamFamily*Sweep and the presets run it against the oracle), and
// the call needs both projections, refused by name before a device is asked for.
TEST(StreamFamily, WritesTheGatedOutputAlone) {
  for (const cuda::Family* family : cuda::families())
    EXPECT_EQ(family->writes_glu_output(cuda::Plan{}), std::string(family->name()) == kStream)
        << family->name();
  const std::vector<std::int32_t> offsets{0, 1};
  GroupedNvfp4 down = grouped_nvfp4(offsets, 64, 128).args;
  down.proj_count = 1;
  try {
    cuda::nvfp4_grouped_to_glu(down, cuda::GluInput{}, {}, nullptr);
    ADD_FAILURE() << "one projection was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.status(), Status::invalid_argument);
    EXPECT_NE(std::string(e.what()).find("proj_count = 1"), std::string::npos) << e.what();
  }
}

// The NVFP4 kernel's work: every item taken by exactly one team (where the launch writes the
// gated output, a team takes a row block's gate item and streams its up item, the next one, with
// it), and the items' places covering every (slot, projection, row block) once. Host logic (the
// kernel's own functions).
TEST(StreamFamily, ItemWalkTakesEveryItemOnce) {
  namespace s = cuda::sm90::stream;
  for (int gated : {0, 1})
    for (int proj_count : {1, 2}) {
      if (gated && proj_count == 1) continue;  // the gated output needs gate and up
      for (int row_blocks : {1, 3, 8})
        for (int slots : {1, 5})
          for (int stride : {1, 2, 7, 64}) {  // the grid's teams
            s::Nvfp4StreamParams p{};
            p.proj_count = proj_count;
            p.row_blocks = row_blocks;
            p.items_per_slot =
                cuda::FastDiv::of(static_cast<std::uint32_t>(proj_count * row_blocks));
            p.glu_output = gated;
            const int total = slots * proj_count * row_blocks;
            const std::string where = fmt::format("gated {} proj {} blocks {} slots {} stride {}",
                                                  gated, proj_count, row_blocks, slots, stride);
            std::vector<int> team_of(total, -1);
            for (int team = 0; team < stride; ++team)
              for (int item = s::first_item(p, team); item < total;
                   item = s::next_item(p, item, stride)) {
                ASSERT_EQ(team_of[item], -1) << where << ": item " << item << " taken twice";
                team_of[item] = team;
                if (!gated) continue;
                ASSERT_LT(item + 1, total) << where;
                const s::ItemPlace gate = s::item_place(p, item), up = s::item_place(p, item + 1);
                ASSERT_EQ(team_of[item + 1], -1)
                    << where << ": item " << item + 1 << " taken twice";
                team_of[item + 1] = team;  // streamed with its gate item
                EXPECT_EQ(gate.proj, 0) << where;
                EXPECT_EQ(up.proj, 1) << where;
                EXPECT_EQ(up.slot, gate.slot) << where;
                EXPECT_EQ(up.n0, gate.n0) << where;
              }
            std::vector<int> seen(total, 0);
            for (int item = 0; item < total; ++item) {
              EXPECT_GE(team_of[item], 0) << where << ": item " << item << " never taken";
              const s::ItemPlace at = s::item_place(p, item);
              ASSERT_TRUE(at.slot >= 0 && at.slot < slots && at.proj >= 0 && at.proj < proj_count &&
                          at.n0 % s::kNvfp4RowsPerCta == 0 &&
                          at.n0 < row_blocks * s::kNvfp4RowsPerCta)
                  << where << ": item " << item;
              ++seen[(at.slot * proj_count + at.proj) * row_blocks + at.n0 / s::kNvfp4RowsPerCta];
            }
            for (int place = 0; place < total; ++place) EXPECT_EQ(seen[place], 1) << where;
          }
    }
}

// A bf16 GEMM's configuration: the narrowest holding M with 8 weight rows a CTA, and past 16 rows
// 32 weight rows a CTA where N gives them kWideMinCtas CTAs. Host logic.
TEST(StreamFamily, Bf16ConfigurationFollowsRowsAndWidth) {
  namespace s = cuda::sm90::stream;
  const auto config = [](int m, int n) { return s::kConfigs[s::bf16_config(m, n)]; };
  EXPECT_EQ(config(1, 28672).tokens, 8);
  EXPECT_EQ(config(9, 28672).tokens, 16);
  EXPECT_EQ(config(16, 28672).bf16_rows, 8);
  const int wide_n = s::kWideMinCtas * 32;
  for (int m : {17, 32}) {
    EXPECT_EQ(config(m, wide_n - 32).tokens, 32);
    EXPECT_EQ(config(m, wide_n - 32).bf16_rows, 8) << m;
    EXPECT_EQ(config(m, wide_n - 31).bf16_rows, 32) << m;
    EXPECT_EQ(config(m, 28672).bf16_rows, 32) << m;
  }
  for (int m : {33, 64}) {
    EXPECT_EQ(config(m, 1536).tokens, 64) << m;
    EXPECT_EQ(config(m, 1536).bf16_rows, 16) << m;
  }
}

// The warps sharing an NVFP4 item's K: the fewest that cut a warp's range to kTeamGroups groups
// and give 5/8 of the resident warps an item. Host logic.
TEST(StreamFamily, TeamSizeFollowsItemsAndK) {
  namespace s = cuda::sm90::stream;
  constexpr long long kH100Warps = 132 * 3 * s::kWarps;                 // the 8-token kernel's
  EXPECT_EQ(s::team_warps(100000, s::kTeamGroups, kH100Warps), 1);      // many items, short K
  EXPECT_EQ(s::team_warps(100000, s::kTeamGroups + 1, kH100Warps), 2);  // a range past 24
  EXPECT_EQ(s::team_warps(100000, 4096, kH100Warps), 8);                // at most 8
  EXPECT_EQ(s::team_warps(2048, 112, kH100Warps), 8);  // DeepSeek-V3 gate_up, T = 1
  EXPECT_EQ(s::team_warps(3584, 32, kH100Warps), 2);   // its down
  EXPECT_EQ(s::team_warps(768, 32, kH100Warps), 4);    // Qwen3-30B-A3B gate_up: items
  EXPECT_EQ(s::team_warps(7296, 12, kH100Warps), 1);   // its down at T = 8
  EXPECT_EQ(s::team_warps(1980, 12, kH100Warps), 1);   // 5/8 of the warps have an item
  EXPECT_EQ(s::team_warps(1979, 12, kH100Warps), 2);   // not quite
  for (int warps : {1, 2, 4, 8}) EXPECT_TRUE(s::valid_team_warps(warps));
  for (int warps : {0, 3, 16}) EXPECT_FALSE(s::valid_team_warps(warps));
}

#endif

}  // namespace
}  // namespace metrale::cuda_test
