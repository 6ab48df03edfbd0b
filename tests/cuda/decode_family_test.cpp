// The kernel-family seam and the decode family, on the GPU:
//   - 512 and 1024 experts in every grouped operation, host and device offsets, both families,
//     exact mode against the oracle (the tables live in the workspace: no 256-expert limit);
//   - the decode family forced at every configuration (token width, 64- or 128-row tiles) and at K
//     splits across chunk edges, exact mode bit for bit, each case run twice (determinism);
//   - the rule for 128-row tiles (host logic);
//   - realistic mode: a split, an unsplit and a wider token tile give the same bits (the order of
//     the fp32 sums depends on K and the expert's rows only), and the grouped call equals a single
//     GEMM on one expert's rows;
//   - an expert past the widest token tile (more than 256 rows: several token tiles), K in one
//     chunk that ends inside a stage;
//   - host-planned launches whose loader crosses units inside the first stages;
//   - a call in two decode launches, the second on the activations the first staged, with host
//     offsets and, where the row model expects both windows filled, with device offsets;
//   - device offsets that overlap write nothing outside the buffers;
//   - the seam's refusals: a forced family that cannot run says why; 2049 experts name the limit.
#include <algorithm>
#include <cstdlib>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "cuda_test_support.hpp"

#ifdef METRALE_HAS_CUDA
#include "check/grouped.hpp"
#include "check/routing.hpp"
#include "cuda/family.hpp"
#include "cuda/sm90/decode/decode_params.hpp"
#endif

namespace metrale::cuda_test {
namespace {

#ifdef METRALE_HAS_CUDA

constexpr const char* kDecode = "sm90-decode";
constexpr const char* kTiled = "sm90-tiled";

check::Case forced(check::Case c, const std::string& kernel, bool device_offsets = false) {
  c.cuda_kernel = kernel;
  c.device_offsets = device_offsets;
  return c;
}

TEST(DecodeFamily, ManyExpertsEveryGroupedOp) {
  METRALE_SKIP_WITHOUT_GPU();
  std::uint64_t seed = 7000;
  for (int experts : {512, 1024})
    for (Op op : {Op::grouped_gate_up, Op::grouped_gate_up_fused, Op::grouped_down})
      for (const char* kernel : {"", kTiled})
        for (bool device_offsets : {false, true}) {
          const check::Routing routing{96, experts, 8, RoutingKind::skew};
          expect_pass(forced(grouped_case(op, Mode::exact, 72, 64, routing, ++seed), kernel,
                             device_offsets));
        }
}

// Every configuration (token width and tile rows) and splits that cut K at, before and after chunk
// edges: rows <= 8 make chunks of 1024 K, so K = 1056 is one chunk and a 32-wide remainder.
TEST(DecodeFamily, ForcedWidthsAndSplits) {
  METRALE_SKIP_WITHOUT_GPU();
  std::uint64_t seed = 7100;
  int failures = 0;
  for (int config = 0; config < cuda::sm90::decode::kConfigCount; ++config)
    for (int splits : {1, 2, 3, 7})
      for (int k : {32, 1024, 1056, 3104}) {
        const std::string kernel = fmt::format("{}:{}:{}", kDecode, config, splits);
        const check::Routing routing{24, 8, 2, RoutingKind::skew};
        const check::Case c =
            forced(grouped_case(Op::grouped_gate_up_fused, Mode::exact, 65, k, routing, ++seed),
                   kernel, splits == 3);
        if (!expect_pass(c) && ++failures >= kMaxReportedFailures) return;
      }
}

// Every token width on prepacked weights in the halves' layout (METRALE_PREPACKED_LAYOUT=halves;
// its own kernel instantiation per width), host and device offsets.
TEST(DecodeFamily, ForcedWidthsOnTheHalvesLayout) {
  METRALE_SKIP_WITHOUT_GPU();
  std::uint64_t seed = 7150;
  int failures = 0;
  for (int config = 0; config < cuda::sm90::decode::kConfigCount; ++config)
    for (Op op : {Op::grouped_gate_up, Op::grouped_down})
      for (bool device_offsets : {false, true}) {
        const check::Routing routing{24, 8, 2, RoutingKind::skew};
        check::Case c = forced(grouped_case(op, Mode::exact, 65, 1056, routing, ++seed),
                               fmt::format("{}:{}", kDecode, config), device_offsets);
        c.prepacked = true;
        c.prepacked_layout = "halves";
        if (!expect_pass(c) && ++failures >= kMaxReportedFailures) return;
      }
}

// Prepacked weights in the fragment order (format/fragment_order.hpp; the default): every
// token width, the three grouped operations, host and device offsets, K a multiple of 64 (1024:
// one chunk; 3072 split in three) and with a 32-code tail (1056, 3104: its last k-tile in the
// halves' layout and the decode order, the rest in natural order).
TEST(DecodeFamily, ForcedWidthsOnTheFragmentOrder) {
  METRALE_SKIP_WITHOUT_GPU();
  std::uint64_t seed = 7170;
  int failures = 0;
  for (int config = 0; config < cuda::sm90::decode::kConfigCount; ++config)
    for (Op op : {Op::grouped_gate_up_fused, Op::grouped_gate_up, Op::grouped_down})
      for (bool device_offsets : {false, true})
        for (int tail : {0, 32}) {
          const check::Routing routing{24, 8, 2, RoutingKind::skew};
          const int k = (device_offsets ? 3072 : 1024) + tail;
          check::Case c = forced(grouped_case(op, Mode::exact, 65, k, routing, ++seed),
                                 fmt::format("{}:{}:{}", kDecode, config, device_offsets ? 3 : 1),
                                 device_offsets);
          c.prepacked = true;
          c.prepacked_layout = "fragments";
          if (!expect_pass(c) && ++failures >= kMaxReportedFailures) return;
        }
}

// Many units of one stage each (K = 32 and 96, 48 experts x 2 x 32 weight tiles: ~3000 units
// on ~500 CTAs): with host offsets (planned on the host) the loader crosses units inside the
// first stages, whose weights it copies before the staging kernel has written the activations;
// device offsets (the plan kernel's list) the same shape.
TEST(DecodeFamily, ShortUnitsCrossInTheFirstStages) {
  METRALE_SKIP_WITHOUT_GPU();
  std::uint64_t seed = 7150;
  for (int k : {32, 96})
    for (bool device_offsets : {false, true}) {
      const check::Routing routing{64, 48, 4, RoutingKind::skew};
      expect_pass(
          forced(grouped_case(Op::grouped_gate_up_fused, Mode::exact, 2048, k, routing, ++seed),
                 kDecode, device_offsets));
    }
}

// Experts past the widest tile: 300 rows on one expert run as several token tiles, and sum K in
// one chunk (more than kFoldMaxRows rows), whose last stage is part-filled unless K is a whole
// number of stages: K = 1056 (17 k-tiles) and gpt-oss's 2880 (45), host and device offsets.
TEST(DecodeFamily, ExpertWiderThanTheTokenTile) {
  METRALE_SKIP_WITHOUT_GPU();
  const check::Routing routing{300, 4, 1, RoutingKind::one_expert};
  std::uint64_t seed = 7200;
  for (int config : {0, 3, 5})
    for (int k : {96, 1056, 2880})
      for (bool device_offsets : {false, true})
        expect_pass(forced(grouped_case(Op::grouped_down, Mode::exact, 64, k, routing, ++seed),
                           fmt::format("{}:{}", kDecode, config), device_offsets));
}

// Realistic inputs through the API: the output of one (kernel, offsets) choice.
std::vector<bf16_bits> run_realistic(const check::GroupedHost& h, check::GroupedDevice& d,
                                     const std::string& kernel) {
  setenv("METRALE_CUDA_KERNEL", kernel.c_str(), 1);
  const Result r = nvfp4_grouped(check::device_args(h, d, false, h.routing.max_rows), kCuda);
  unsetenv("METRALE_CUDA_KERNEL");
  EXPECT_TRUE(r.ok()) << kernel << ": " << r.message;
  check::device_synchronize(kernel);
  std::vector<bf16_bits> out = d.out[0].download<bf16_bits>();
  if (h.proj_count == 2) {
    const auto up = d.out[1].download<bf16_bits>();
    out.insert(out.end(), up.begin(), up.end());
  }
  return out;
}

TEST(DecodeFamily, SplitsAndWidthsGiveTheSameBits) {
  METRALE_SKIP_WITHOUT_GPU();
  for (int k : {2048, 7168}) {
    const check::Routing routing{40, 16, 4, RoutingKind::skew};
    const check::GroupedHost h = check::make_grouped_host(
        grouped_case(Op::grouped_gate_up_fused, Mode::realistic, 200, k, routing, 7300 + k));
    check::GroupedDevice d = check::upload_grouped(h);
    const auto reference = run_realistic(h, d, fmt::format("{}:3:1", kDecode));
    for (const char* variant : {"sm90-decode:3:2", "sm90-decode:3:7", "sm90-decode:5:3",
                                "sm90-decode:4", "sm90-decode"}) {
      const auto got = run_realistic(h, d, variant);
      const check::Comparison cmp = check::compare_bf16_bits(got, reference, h.n, {}, variant);
      EXPECT_EQ(cmp.mismatches, 0) << variant << " K = " << k << ": " << cmp.first_detail;
    }
  }
}

// Past the 2048-expert limit (host offsets travel in one 8 KB block) a call is refused, naming it.
TEST(DecodeFamily, TooManyExpertsNamesTheLimit) {
  METRALE_SKIP_WITHOUT_GPU();
  const check::GroupedHost h = check::make_grouped_host(grouped_case(
      Op::grouped_down, Mode::exact, 64, 64, {4, 2049, 1, RoutingKind::uniform}, 7500));
  check::GroupedDevice d = check::upload_grouped(h);
  const Result r = nvfp4_grouped(check::device_args(h, d, false, h.routing.max_rows), kCuda);
  EXPECT_EQ(r.status, Status::unsupported) << r.message;
  EXPECT_NE(r.message.find("num_experts = 2049"), std::string::npos) << r.message;
  EXPECT_NE(r.message.find("2048"), std::string::npos) << r.message;
}

TEST(DecodeFamily, RefusalsSayWhy) {
  METRALE_SKIP_WITHOUT_GPU();
  const cuda::Family* decode = cuda::find_family(kDecode);
  ASSERT_NE(decode, nullptr);
  cuda::Problem bf16;
  bf16.nvfp4 = false;
  bf16.args.k = 64;
  EXPECT_NE(decode->why_not(bf16), "");
  cuda::Problem odd_k;
  odd_k.args.k = 48;
  EXPECT_NE(decode->why_not(odd_k).find("K = 48"), std::string::npos) << decode->why_not(odd_k);
  setenv("METRALE_CUDA_KERNEL", "sm90-decode", 1);
  check::Case c = gemm_case(Op::bf16_gemm, Mode::exact, 4, 64, 64, 7400);
  const check::Report r = check::run_case(c);
  unsetenv("METRALE_CUDA_KERNEL");
  EXPECT_FALSE(r.passed());
  EXPECT_NE(r.detail.find("bf16 weights"), std::string::npos) << r.detail;
  EXPECT_EQ(cuda::find_family("sm90-nothing"), nullptr);
  for (const cuda::Family* f : cuda::families()) EXPECT_GT(f->config_count(), 0) << f->name();
}

// The token width rule (host logic, no GPU): twice the mean expert, never past the largest.
// DeepSeek-V3 at T = 64 measured it (docs/perf.md): 32 tokens (the largest expert) 2128 us for
// gate_up, 16 tokens 1670, 8 tokens 1488.
TEST(DecodeFamily, TokenWidthIsTwiceTheMeanExpert) {
  using cuda::sm90::decode::kTokenWidths;
  using cuda::sm90::decode::token_config;
  EXPECT_EQ(kTokenWidths[token_config(20, 3)], 8);  // DeepSeek-V3 T = 64: many small experts
  EXPECT_EQ(kTokenWidths[token_config(5, 5)], 8);   // one expert: its own rows
  EXPECT_EQ(kTokenWidths[token_config(24, 24)], 32);
  EXPECT_EQ(kTokenWidths[token_config(9, 8)], 16);  // the largest caps twice the mean
  EXPECT_EQ(kTokenWidths[token_config(1000, 200)], 256);
  EXPECT_EQ(kTokenWidths[token_config(0, 0)], 8);

  // Through the family's plan on host offsets: only the experts in the window count.
  const cuda::Family* decode = cuda::find_family(kDecode);
  ASSERT_NE(decode, nullptr);
  std::vector<std::int32_t> offsets{0};
  for (int rows : {2, 0, 3, 1, 20, 2, 100}) offsets.push_back(offsets.back() + rows);
  cuda::Problem p;
  p.args.groups.num_experts = static_cast<int>(offsets.size()) - 1;
  p.args.groups.offsets = offsets.data();
  p.args.groups.m_total = offsets.back();
  EXPECT_EQ(decode->describe(decode->plan(p, cuda::RowWindow{1, 32})),
            "sm90-decode tokens=16 splits=auto");
  EXPECT_EQ(decode->describe(decode->plan(p, cuda::RowWindow{1, 4})),
            "sm90-decode tokens=8 splits=auto");
}

// Device offsets (host logic): the narrowest width that at most one expert in ten passes when an
// expert's rows are Poisson(m_total / experts), at most the caller's bound.
TEST(DecodeFamily, DeviceOffsetsWidthFromTheRowTail) {
  const cuda::Family* decode = cuda::find_family(kDecode);
  ASSERT_NE(decode, nullptr);
  auto width = [&](int m_total, int experts, int bound) {
    cuda::Problem p;
    p.args.groups = ExpertGroups{nullptr, true, experts, m_total, bound};
    return decode->describe(decode->plan(p, cuda::RowWindow{}));
  };
  EXPECT_EQ(width(64 * 8, 256, 64), "sm90-decode tokens=8 splits=auto");       // 2 rows an expert
  EXPECT_EQ(width(64 * 8, 128, 64), "sm90-decode tokens=8 splits=auto");       // 4: P(> 8) 2 %
  EXPECT_EQ(width(768 * 8, 256, 768), "sm90-decode tokens=32 splits=auto");    // 24: P(> 32) 5 %
  EXPECT_EQ(width(1024 * 8, 256, 1024), "sm90-decode tokens=64 splits=auto");  // 32: P(> 32) 44 %
  EXPECT_EQ(width(768 * 8, 256, 16), "sm90-decode tokens=16 splits=auto");     // the bound
  EXPECT_EQ(width(0, 256, 0), "sm90-decode tokens=8 splits=auto");
}

// Host logic: 128-row tiles where a launch planned on the device has at least kWideUnitWaves waves
// of them on the resident grid (4 CTAs an SM, 3 at 32 tokens), 64-row tiles for a launch planned
// on the host (at most kCompactExperts experts with rows) and for widths past 32.
TEST(DecodeFamily, WideTilesWhereADevicePlannedLaunchHasWavesOfThem) {
  const cuda::Family* decode = cuda::find_family(kDecode);
  ASSERT_NE(decode, nullptr);
  using cuda::sm90::decode::ctas_an_sm;
  auto waves_of_units = [](int tokens) {
    return cuda::sm90::decode::kWideUnitWaves * ctas_an_sm(tokens, 128) * cuda::device_sm_count();
  };
  auto plan = [&](const std::vector<std::int32_t>& rows, int n) {
    std::vector<std::int32_t> offsets{0};
    for (std::int32_t r : rows) offsets.push_back(offsets.back() + r);
    cuda::Problem p;
    p.args.groups = ExpertGroups{offsets.data(), false, static_cast<std::int32_t>(rows.size()),
                                 offsets.back(), *std::max_element(rows.begin(), rows.end())};
    p.args.n = n;
    p.args.k = 2048;
    p.args.proj_count = 2;
    return decode->describe(decode->plan(p, cuda::RowWindow{}));
  };
  // 100 experts of 2 rows: 200 units a 128-row tile of N, 2 x 100 x n / 128 in all.
  const std::vector<std::int32_t> hundred(100, 2);
  const int enough = (waves_of_units(8) + 199) / 200 * 128;
  EXPECT_EQ(plan(hundred, enough), "sm90-decode tokens=8 rows=128 splits=auto");
  EXPECT_EQ(plan(hundred, enough - 128), "sm90-decode tokens=8 splits=auto");
  // The same units over 64 experts: planned on the host.
  const std::vector<std::int32_t> compact(cuda::sm90::decode::kCompactExperts, 2);
  EXPECT_EQ(plan(compact, 4 * enough), "sm90-decode tokens=8 splits=auto");
  // 16 tokens wide takes them too, and 32 at 3 CTAs an SM; 64 never.
  EXPECT_EQ(plan(std::vector<std::int32_t>(100, 12), enough),
            "sm90-decode tokens=16 rows=128 splits=auto");
  const int enough32 = (waves_of_units(32) + 199) / 200 * 128;
  EXPECT_EQ(ctas_an_sm(32, 128), 3);
  EXPECT_EQ(plan(std::vector<std::int32_t>(100, 24), enough32),
            "sm90-decode tokens=32 rows=128 splits=auto");
  EXPECT_EQ(plan(std::vector<std::int32_t>(100, 24), enough32 - 128),
            "sm90-decode tokens=32 splits=auto");
  EXPECT_EQ(plan(std::vector<std::int32_t>(100, 48), 8 * enough32),
            "sm90-decode tokens=64 splits=auto");
  // Device offsets: the experts holding rows expected under Poisson rows (DeepSeek-V3's gate_up at
  // T = 64: ~221 of 256, 2 x 16 tiles of 128 rows each, ~7000 units), and past kCompactExperts of
  // them (Mixtral's at T = 64: 8 experts of ~16 rows, 32 tokens wide, ~1800 units: 64-row tiles).
  // Only the experts of the launch's window count: Qwen3-30B's gate_up at T = 512 (128 experts,
  // ~32 rows each) holds ~70 experts of at most 32 rows, ~840 units, under 3 waves at 3 CTAs an
  // SM; all 128, ~1540 units, pass them.
  auto device_plan = [&](int m_total, int experts, int n, cuda::RowWindow window = {}) {
    cuda::Problem p;
    p.args.groups = ExpertGroups{nullptr, true, experts, m_total, m_total};
    p.args.n = n;
    p.args.k = 2048;
    p.args.proj_count = 2;
    return decode->describe(decode->plan(p, window));
  };
  EXPECT_EQ(device_plan(64 * 8, 256, 2048), "sm90-decode tokens=8 rows=128 splits=auto");
  EXPECT_EQ(device_plan(64 * 8, 256, 128), "sm90-decode tokens=8 splits=auto");  // ~442 units
  EXPECT_EQ(device_plan(64 * 2, 8, 14336), "sm90-decode tokens=32 splits=auto");
  EXPECT_EQ(device_plan(512 * 8, 128, 768, cuda::RowWindow{1, 32}),
            "sm90-decode tokens=32 splits=auto");
  EXPECT_EQ(device_plan(512 * 8, 128, 768, cuda::RowWindow{1, 32}).find("rows=128"),
            std::string::npos);
}

// The launches the dispatcher plans for experts of these row counts (host offsets).
std::string launches_for(const std::vector<std::int32_t>& rows) {
  std::vector<std::int32_t> offsets{0};
  for (std::int32_t r : rows) offsets.push_back(offsets.back() + r);
  GroupedNvfp4 a{};
  a.groups = ExpertGroups{offsets.data(), false, static_cast<std::int32_t>(rows.size()),
                          offsets.back(), *std::max_element(rows.begin(), rows.end())};
  a.n = 256;
  a.k = 256;
  a.proj_count = 1;
  return cuda::nvfp4_grouped_plan(a);
}

// Host logic: the launches the dispatcher makes for experts past kDecodeMaxRows (family.hpp): a
// decode launch of its own at the 64-token width while at most one in ten of them passes 64 rows
// (that one in several token tiles), else the tiled family; a single GEMM of 48 rows is one
// 64-token decode.
TEST(DecodeFamily, BusierExpertsTakeTheWideTileUnlessManyPassIt) {
  EXPECT_EQ(launches_for({48}), "sm90-decode tokens=64 splits=auto");
  EXPECT_EQ(launches_for({6, 0, 40, 64}),
            "sm90-decode tokens=8 splits=auto + sm90-decode tokens=64 splits=auto");
  std::vector<std::int32_t> rows(9, 40);
  rows.push_back(200);  // one in ten past 64 rows
  EXPECT_EQ(launches_for(rows), "sm90-decode tokens=64 splits=auto");
  rows[0] = 65;  // two in ten
  EXPECT_EQ(launches_for(rows).rfind("sm90-tiled", 0), 0u) << launches_for(rows);
  rows.push_back(20);  // and one expert for the narrow decode
  EXPECT_EQ(launches_for(rows).rfind("sm90-decode tokens=32 splits=auto + sm90-tiled", 0), 0u)
      << launches_for(rows);
}

// Host logic: one decode launch for both windows where the narrow experts are few beside the
// busier ones, or where the busier experts' extra token tiles at the narrow width are few beside
// the narrow experts (family.hpp, kDecodeOneLaunchShare).
TEST(DecodeFamily, OneLaunchWhereAWindowHoldsFewExperts) {
  std::vector<std::int32_t> rows(cuda::kDecodeOneLaunchShare, 40);
  rows.push_back(20);  // one narrow expert beside ten busier ones: the 64-token tile for all
  EXPECT_EQ(launches_for(rows), "sm90-decode tokens=64 splits=auto");
  rows.push_back(20);  // two: a launch each
  EXPECT_EQ(launches_for(rows),
            "sm90-decode tokens=32 splits=auto + sm90-decode tokens=64 splits=auto");
  std::vector<std::int32_t> narrow(cuda::kDecodeOneLaunchShare, 20);
  narrow.push_back(40);  // one busier expert beside ten narrow ones: two 32-token tiles for it
  EXPECT_EQ(launches_for(narrow), "sm90-decode tokens=32 splits=auto");
  std::vector<std::int32_t> eight(cuda::kDecodeOneLaunchShare, 8);
  eight.push_back(60);  // at the 8-token width it would stream its weights 8 times: its own launch
  EXPECT_EQ(launches_for(eight),
            "sm90-decode tokens=8 splits=auto + sm90-decode tokens=64 splits=auto");
  narrow.push_back(200);  // past the wide tile: the tiled family's, as before
  EXPECT_EQ(launches_for(narrow).rfind("sm90-decode tokens=32 splits=auto + sm90-tiled", 0), 0u)
      << launches_for(narrow);
}

// Hot experts beside many narrow ones, in two decode launches (host offsets): the second copies
// no activations and reads those the first staged (Plan::input_staged), bit for bit the oracle's,
// with and without the token gather.
TEST(DecodeFamily, SecondDecodeLaunchReadsTheFirstLaunchsStaging) {
  const check::Routing routing{64, 32, 8, RoutingKind::skew};
  const std::uint64_t seed = 7250;
  const check::RoutingPlan plan = check::make_routing(routing, seed);
  std::vector<std::int32_t> rows;
  for (int e = 0; e < routing.experts; ++e) rows.push_back(plan.offsets[e + 1] - plan.offsets[e]);
  ASSERT_EQ(launches_for(rows),
            "sm90-decode tokens=32 splits=auto + sm90-decode tokens=64 splits=auto");
  METRALE_SKIP_WITHOUT_GPU();
  for (Op op : {Op::grouped_gate_up_fused, Op::grouped_gate_up, Op::grouped_down})
    for (int k : {160, 2048}) expect_pass(grouped_case(op, Mode::exact, 72, k, routing, seed));
}

// With device offsets, two decode launches by window where the row model expects both windows
// well filled (an expert's rows ~ Poisson(m_total / experts): neither window's experts at most
// one in kDecodeOneLaunchShare of the other's), else one (host logic); the two, exact on the GPU.
TEST(DecodeFamily, DeviceOffsetsTwoLaunchesWhereBothWindowsFill) {
  auto launches = [](int m_total, int experts, int bound) {
    GroupedNvfp4 a{};
    a.groups = ExpertGroups{nullptr, true, experts, m_total, bound};
    a.n = 256;
    a.k = 256;
    a.proj_count = 1;
    return cuda::nvfp4_grouped_plan(a);
  };
  const std::string two = "sm90-decode tokens=32 splits=auto + sm90-decode tokens=64 splits=auto";
  EXPECT_EQ(launches(512 * 8, 128, 512), two);  // 32 rows an expert: P(> 32) 45 %
  EXPECT_EQ(launches(896 * 8, 256, 896), two);  // 28: 19 %
  EXPECT_EQ(launches(768 * 8, 256, 768), "sm90-decode tokens=32 splits=auto");    // 24: 5 %
  EXPECT_EQ(launches(1536 * 8, 256, 1536), "sm90-decode tokens=64 splits=auto");  // 48: 99 %
  EXPECT_EQ(launches(512 * 8, 128, 32), "sm90-decode tokens=32 splits=auto");     // the bound: 32
  // On the GPU: 128 tokens on 32 experts, top 8 (32 rows an expert), device offsets, exact.
  METRALE_SKIP_WITHOUT_GPU();
  const check::Routing routing{128, 32, 8, RoutingKind::uniform};
  std::uint64_t seed = 7260;
  for (Op op : {Op::grouped_gate_up_fused, Op::grouped_gate_up, Op::grouped_down})
    expect_pass(forced(grouped_case(op, Mode::exact, 72, 160, routing, ++seed), "", true));
}

// Device offsets are not validated. Offsets that overlap give more experts rows than m_total
// allows (here 64 experts of 16 rows, m_total 16): the outputs are undefined, but nothing is
// written outside the buffers.
TEST(DecodeFamily, OverlappingDeviceOffsetsStayInTheirBuffers) {
  METRALE_SKIP_WITHOUT_GPU();
  const check::GroupedHost h = check::make_grouped_host(grouped_case(
      Op::grouped_down, Mode::exact, 64, 64, {16, 128, 1, RoutingKind::uniform}, 7280));
  check::GroupedDevice d = check::upload_grouped(h);
  std::vector<std::int32_t> offsets(129);
  for (int e = 0; e <= 128; ++e) offsets[e] = e % 2 ? 16 : 0;
  d.offsets.upload(offsets);
  setenv("METRALE_CUDA_KERNEL", kDecode, 1);
  const Result r = nvfp4_grouped(check::device_args(h, d, true, 16), kCuda);
  unsetenv("METRALE_CUDA_KERNEL");
  EXPECT_TRUE(r.ok()) << r.message;
  check::device_synchronize("overlapping device offsets");
  EXPECT_EQ(check::check_all_guards(d.all()), "");
}

// The split rule (host logic, shared by the plan kernel and the host plan): split while fewer
// than half of the resident CTAs would have a unit, then the fewest chunks on the busiest CTA.
TEST(DecodeFamily, SplitRuleFillsHalfTheGrid) {
  using cuda::sm90::decode::choose_splits;
  EXPECT_EQ(choose_splits(512, 7, 528, 528, 0), 1);   // DeepSeek-V3 gate_up T = 1: tiles enough
  EXPECT_EQ(choose_splits(192, 2, 528, 528, 0), 2);   // Qwen3-30B gate_up T = 1
  EXPECT_EQ(choose_splits(128, 14, 528, 528, 0), 4);  // Mixtral down T = 1: 512 units of 4 chunks
  EXPECT_EQ(choose_splits(600, 14, 528, 528, 0), 1);  // past the split capacity
  EXPECT_EQ(choose_splits(128, 14, 528, 528, 3), 3);  // forced
  EXPECT_EQ(choose_splits(0, 1, 528, 528, 0), 1);
  // An expert's share: 5 rows at 8 tokens, 2 projections x 32 weight tiles of 64 rows, K = 7168
  // (112 k-tiles); in 128-row tiles, half the tiles and units, partials as large.
  const auto w = cuda::sm90::decode::expert_work(5, 8, 64, 64, 112, 4);
  EXPECT_EQ(w.tiles, 64);
  EXPECT_EQ(w.chunk_tiles, 16);
  EXPECT_EQ(w.chunks, 7);
  EXPECT_EQ(w.splits, 4);
  EXPECT_EQ(w.units, 256);
  EXPECT_EQ(w.fold_blocks, 1);
  EXPECT_EQ(w.partials, 64LL * 7 * 8 * 64);
  const auto wide = cuda::sm90::decode::expert_work(5, 8, 128, 32, 112, 4);
  EXPECT_EQ(wide.units, 128);
  EXPECT_EQ(wide.partials, 32LL * 7 * 8 * 128);
  // A split past the expert's chunks stops at them; an unsplit expert keeps no partials.
  EXPECT_EQ(cuda::sm90::decode::expert_work(5, 8, 64, 64, 16, 4).splits, 1);
  EXPECT_EQ(cuda::sm90::decode::expert_work(5, 8, 64, 64, 16, 4).partials, 0);
}

#else
TEST(DecodeFamily, NeedsTheCudaBackend) {
  GTEST_SKIP() << "the CUDA backend was not built";
}
#endif

}  // namespace
}  // namespace metrale::cuda_test
