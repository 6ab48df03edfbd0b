// Which tile the tiled family picks, host logic that runs anywhere the CUDA backend is built:
// the forced-only tiles are twins of the family's own; the rule that decides for the widest tile,
// against the measured choices; the tiles chosen over expert sizes, for bf16 weights, for K
// splits, on device offsets, for single GEMMs and past the grid's row limit; the raster order.
#include <algorithm>
#include <iterator>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "cuda_test_support.hpp"

#ifdef METRALE_HAS_CUDA
#include "check/check.hpp"
#include "check/routing.hpp"
#include "check/scoped_kernel.hpp"
#include "cuda/cuda_backend.hpp"
#include "cuda/family.hpp"
#include "cuda/sm90/tiled/tiled_params.hpp"
#endif

namespace metrale::cuda_test {
namespace {

#ifdef METRALE_HAS_CUDA

// Whether one of the tiles the family picks is `same` (a predicate on its TileConfig).
template <class Same>
bool a_chosen_tile_is(Same same) {
  return std::any_of(std::begin(cuda::sm90::kChosenTiles), std::end(cuda::sm90::kChosenTiles),
                     [&](int c) { return same(cuda::sm90::kTiles[c]); });
}

// The decoder tiles are reached only when forced, and are the family's own 128- and 256-token
// tiles with a decoder (same tokens, weight rows and wgmma chunk), so that a measurement compares
// the decode alone. Host logic.
TEST(TiledFamily, DecoderTilesAreForcedTwinsOfTheChosenWideTiles) {
  int decoder_tiles = 0;
  for (int c : cuda::sm90::kChosenTiles) EXPECT_EQ(cuda::sm90::kTiles[c].decoded, 0) << c;
  for (const cuda::sm90::TileConfig& t : cuda::sm90::kTiles) {
    if (t.decoded == 0) continue;
    ++decoder_tiles;
    EXPECT_TRUE(t.specialized);
    EXPECT_TRUE(a_chosen_tile_is([&](const cuda::sm90::TileConfig& o) {
      return o.specialized && o.tokens == t.tokens && o.weight_rows == t.weight_rows &&
             o.chunk == t.chunk;
    })) << t.tokens
        << " tokens";
  }
  EXPECT_EQ(decoder_tiles, 2);
}

// The tiles that differ from one of the family's own tiles in how a consumer issues its work
// alone (a chunk's four k16 wgmmas in one asm statement, step_batch; block scales converted once
// a quad, quad_scales) are reached only when forced and are
// that tile otherwise (same tokens, weight rows, stages, roles and chunk), so that a measurement
// compares the issue alone. Host logic.
TEST(TiledFamily, IssueVariantTilesAreForcedTwinsOfChosenTiles) {
  int batched = 0, quad = 0;
  for (int c : cuda::sm90::kChosenTiles) {
    EXPECT_FALSE(cuda::sm90::kTiles[c].step_batch) << c;
    EXPECT_FALSE(cuda::sm90::kTiles[c].quad_scales) << c;
  }
  for (const cuda::sm90::TileConfig& t : cuda::sm90::kTiles) {
    if (!t.step_batch && !t.quad_scales) continue;
    batched += t.step_batch;
    quad += t.quad_scales;
    EXPECT_TRUE(a_chosen_tile_is([&](const cuda::sm90::TileConfig& o) {
      return o.specialized == t.specialized && o.tokens == t.tokens &&
             o.weight_rows == t.weight_rows && o.stages == t.stages && o.chunk == t.chunk &&
             o.decoded == t.decoded;
    })) << t.tokens
        << " tokens";
  }
  EXPECT_EQ(batched, 2);  // 12 and 14
  EXPECT_EQ(quad, 2);     // 13 and 14
}

// The widest tile's grid rule against the choices measured on 132 SMs (docs/perf.md, "the
// 256-token tile", on the H200; the last dense row on an H100, twenty-sixth session): the bench's
// dense shapes (bf16 weights; N = channel tiles x 128) at M = 512 and 4096, and the grouped
// gate_up (NVFP4) of Qwen3-Next and DeepSeek-V3 at T = 4096. Host logic: runs anywhere.
TEST(TiledFamily, WideTileRuleMatchesTheMeasuredChoices) {
  struct Measured {
    const char* shape;
    bool nvfp4;
    long channel_tiles, wide_row_tiles, narrow_row_tiles;
    bool wide_was_faster;
  };
  const Measured measured[] = {
      {"Qwen3 dense M=512 (N=1536): 28.5 us wide, 19.6 narrow", false, 12, 2, 4, false},
      {"DeepSeek-V3 dense M=512 (N=4096): 73.4 vs 57.9", false, 32, 2, 4, false},
      {"Qwen3-Next dense M=512 (N=1024): 27.1 vs 18.5", false, 8, 2, 4, false},
      {"gpt-oss dense M=512 (N=5760): 36.9 vs 53.1", false, 45, 2, 4, true},
      {"Mixtral dense M=512 (N=28672): 246 vs 321", false, 224, 2, 4, true},
      {"DeepSeek-V3 dense M=4096: 373 vs 485", false, 32, 16, 32, true},
      {"Qwen3-Next dense M=4096: 30.4 vs 36.5", false, 8, 16, 32, true},
      {"Mixtral dense M=4096: 1724 vs 2608", false, 224, 16, 32, true},
      // 192 wide tiles take two waves, 384 narrow ones three: what the bf16 tile time decides
      // (NVFP4's kWideCtaTime would take the wide tile).
      {"Qwen3 dense M=4096 (N=1536): 50.5 vs 47.5", false, 12, 16, 32, false},
      // 512 experts of about 80 rows: one tile each either way.
      {"Qwen3-Next gate_up T=4096 (2 x 4 channel tiles): 1071 vs 847", true, 8, 512, 520, false},
      // 256 experts of about 128 rows: about half need a second 128-token tile.
      {"DeepSeek-V3 gate_up T=4096 (2 x 16 channel tiles): 6406 vs 7369", true, 32, 256, 390, true},
  };
  using cuda::sm90::TileLoad;
  using cuda::sm90::tile_time;
  for (const Measured& m : measured) {
    // Measured with full-width tiles (before tile_width).
    const long wide = m.channel_tiles * m.wide_row_tiles;
    const long narrow = m.channel_tiles * m.narrow_row_tiles;
    EXPECT_EQ(cuda::sm90::wide_tile_pays(TileLoad{wide, wide * tile_time(256, m.nvfp4)},
                                         TileLoad{narrow, narrow * tile_time(128, m.nvfp4)}, 132),
              m.wide_was_faster)
        << m.shape;
  }
}

// The family's own choice, over expert sizes from one row to past the widest tile, on host and
// device offsets: one of kChosenTiles; the warp-specialised persistent kernel for the 128- and
// 256-token tiles, the CTA-synchronised one below (docs/perf.md, "2026-12-02, sixth session").
// Host logic: runs anywhere.
TEST(TiledFamily, ChoosesWarpSpecialisedTilesFrom128Tokens) {
  const cuda::Family* tiled = cuda::find_family("sm90-tiled");
  ASSERT_NE(tiled, nullptr);
  for (int c : cuda::sm90::kChosenTiles)
    EXPECT_EQ(cuda::sm90::kTiles[c].specialized, cuda::sm90::kTiles[c].tokens >= 128) << c;
  for (int rows : {1, 7, 33, 100, 129, 300, 4096}) {
    for (bool on_device : {false, true}) {
      const std::int32_t offsets[3] = {0, rows, 2 * rows};
      cuda::Problem problem;
      problem.args.groups = ExpertGroups{offsets, on_device, 2, 2 * rows, rows};
      problem.args.n = 1024;
      problem.args.k = 1024;
      problem.args.proj_count = 2;
      const cuda::Plan plan = tiled->plan(problem, cuda::RowWindow{});
      EXPECT_NE(std::find(std::begin(cuda::sm90::kChosenTiles), std::end(cuda::sm90::kChosenTiles),
                          plan.config),
                std::end(cuda::sm90::kChosenTiles))
          << rows << " rows, device " << on_device;
      const bool specialized = cuda::sm90::kTiles[plan.config].specialized;
      EXPECT_EQ(specialized, rows >= 33) << rows << " rows, device " << on_device;
      EXPECT_EQ(tiled->describe(plan).find("warp-specialised") != std::string::npos, specialized)
          << rows << " rows, device " << on_device;
    }
  }
}

// The bench's dense GEMM of a preset as a one-expert problem: M = offsets[1] rows, N = 2 inter,
// K = hidden, NVFP4 weights (set nvfp4 = false for bf16). `offsets` must outlive the problem.
cuda::Problem dense_problem(const check::ModelPreset& model, const std::int32_t (&offsets)[2]) {
  cuda::Problem problem;
  problem.args.groups = ExpertGroups{offsets, false, 1, offsets[1], offsets[1]};
  problem.args.n = 2 * model.inter;
  problem.args.k = model.hidden;
  problem.args.proj_count = 1;
  return problem;
}

// bf16 weights (the dense GEMM) take the CTA-synchronised 256-token tile where their wide tile
// pays (kWideCtaTimeBf16), which is never where NVFP4 weights of the same shape take a narrower
// one, and NVFP4's tile elsewhere. Over the bench's dense shapes (M = T, N = 2 inter, K =
// hidden), on 132 multiprocessors: the one shape where the two differ is Qwen3-30B-A3B's at M =
// 4096 (192 wide tiles in two waves, 384 narrow ones in three: measured 50.5 us on tile 7, 47.5
// on tile 4, an H100). A small grid takes the 64-token tile instead (SmallBf16GridsSplitK).
// Host logic.
TEST(TiledFamily, Bf16WeightsTakeTheCtaSynchronisedWideTile) {
  const check::ScopedVariable grid("METRALE_CUDA_DENSE_SCHEDULE", "tiles");  // the tile rules
  const cuda::Family* tiled = cuda::find_family("sm90-tiled");
  ASSERT_NE(tiled, nullptr);
  ASSERT_FALSE(cuda::sm90::kTiles[cuda::sm90::kBf16WideTile].specialized);
  const int widest = std::end(cuda::sm90::kChosenTiles)[-1];
  const int narrower = std::end(cuda::sm90::kChosenTiles)[-2];
  ASSERT_EQ(cuda::sm90::kTiles[cuda::sm90::kBf16WideTile].tokens,
            cuda::sm90::kTiles[widest].tokens);
  int wide = 0;
  std::vector<std::string> narrowed;  // where NVFP4 takes the wide tile and bf16 does not
  for (const check::ModelPreset& model : check::model_presets())
    for (int tokens : {512, 4096, 16384}) {
      const std::int32_t offsets[2] = {0, tokens};
      cuda::Problem problem = dense_problem(model, offsets);
      const int nvfp4 = tiled->plan(problem, cuda::RowWindow{}).config;
      problem.nvfp4 = false;
      const cuda::Plan bf16 = tiled->plan(problem, cuda::RowWindow{});
      const bool bf16_wide =
          cuda::sm90::kTiles[bf16.config].tokens == cuda::sm90::kTiles[widest].tokens;
      wide += bf16_wide;
      if (bf16_wide) {
        EXPECT_EQ(nvfp4, widest) << model.display << " T = " << tokens;
      } else if (nvfp4 == widest) {
        narrowed.push_back(std::string(model.display) + " T = " + std::to_string(tokens));
      }
      int expected = bf16_wide         ? cuda::sm90::kBf16WideTile
                     : nvfp4 == widest ? narrower
                                       : nvfp4;
      // A grid of 128-token tiles or wider that fills at most half of the multiprocessors takes
      // the CTA-synchronised 64-token tile (narrow_small_grid; tile 3).
      const int rows = cuda::sm90::kTiles[expected].tokens;
      const int tiles = (tokens + rows - 1) / rows * ((problem.args.n + 127) / 128);
      if (rows > 64 && 2 * tiles <= cuda::device_sm_count()) expected = 3;
      if (bf16.splits > 1) {  // a K split runs on the CTA-synchronised tile of the same shape
        EXPECT_FALSE(cuda::sm90::kTiles[bf16.config].specialized) << model.display;
        EXPECT_EQ(cuda::sm90::kTiles[bf16.config].tokens, cuda::sm90::kTiles[expected].tokens)
            << model.display << " T = " << tokens;
      } else {
        EXPECT_EQ(bf16.config, expected) << model.display << " T = " << tokens;
      }
    }
  EXPECT_GT(wide, 0);  // the shapes reach the wide tile
  if (cuda::device_sm_count() == 132) {
    EXPECT_EQ(narrowed, std::vector<std::string>{"Qwen3-30B-A3B T = 4096"});
  }
}

// The bench's label of a dense bf16 row (bf16_gemm_plan) names the tiled family's plan for it,
// past the stream family's rows (stream_family_test.cpp). Host logic.
TEST(TiledFamily, DenseLabelNamesThePlannedTile) {
  const cuda::Family* tiled = cuda::find_family("sm90-tiled");
  ASSERT_NE(tiled, nullptr);
  for (const check::ModelPreset& model : check::model_presets())
    for (int tokens : {cuda::kStreamMaxBf16Rows + 1, 64, 512, 4096}) {
      const std::int32_t offsets[2] = {0, tokens};
      cuda::Problem problem = dense_problem(model, offsets);
      problem.nvfp4 = false;
      const std::string label = cuda::bf16_gemm_plan(tokens, 2 * model.inter, model.hidden);
      // The stream family's small GEMMs (stream_family_test.cpp) have its label.
      if (tokens <= cuda::kStreamMaxSmallBf16Rows && label.starts_with("sm90-stream")) continue;
      EXPECT_EQ(label, tiled->describe(tiled->plan(problem, cuda::RowWindow{})))
          << model.display << " T = " << tokens;
    }
}

// A dense bf16 GEMM's plan copies its stages by TMA, and its label says so, unless
// METRALE_CUDA_DENSE_COPY=cp.async; NVFP4 weights never (their copies are cp.async). Host logic.
TEST(TiledFamily, DenseGemmPlansTmaCopies) {
  EXPECT_NE(cuda::bf16_gemm_plan(64, 4096, 7168).find(" tma"), std::string::npos);
  for (int m : {512, 4096})
    EXPECT_NE(cuda::bf16_gemm_plan(m, 1536, 2048).find(" tma"), std::string::npos) << m;
  {
    const check::ScopedVariable copies("METRALE_CUDA_DENSE_COPY", "cp.async");
    EXPECT_EQ(cuda::bf16_gemm_plan(512, 1536, 2048).find("tma"), std::string::npos);
  }
  const cuda::Family* tiled = cuda::find_family("sm90-tiled");
  ASSERT_NE(tiled, nullptr);
  const std::int32_t offsets[2] = {0, 512};
  cuda::Problem problem = dense_problem(check::model_presets().front(), offsets);
  problem.nvfp4 = true;
  EXPECT_FALSE(tiled->plan(problem, cuda::RowWindow{}).tma);
  problem.nvfp4 = false;
  EXPECT_TRUE(tiled->plan(problem, cuda::RowWindow{}).tma);
}

// Which bf16 GEMMs take the 64-token tile (narrow_small_grid) and which split K
// (split_small_grid), on 132 multiprocessors (an H200; the host count without a device): a grid
// of 128-token tiles or wider that fills at most half of them takes the 64-token tile, and
// tiles that then fill at most half of them cut K, at least 8 k-tiles a range, at most 8 ranges
// (a cluster): the bench's dense M = 512 of Qwen3-30B (48 tiles of 128 x 128: 96 of 64 x 128,
// whole) and Qwen3-Next (32 tiles: 64 of 64 x 128, 2 ranges; at M = 64, two row tiles of 32, 4
// ranges), the 8- and 16-token tiles of M = 1 and 8 (Qwen3-30B: 24 tiles, 4 ranges; DeepSeek-V3:
// 64 tiles, 2 ranges; gpt-oss: 90 tiles, none), nothing at 4096 rows; NVFP4 weights never. On a
// device, fewer ranges where the tiles' clusters would not all run at once. Host logic, but the
// counts are the current device's.
TEST(TiledFamily, SmallBf16GridsSplitK) {
  const check::ScopedVariable grid("METRALE_CUDA_DENSE_SCHEDULE", "tiles");  // the tile rules
  const cuda::Family* tiled = cuda::find_family("sm90-tiled");
  ASSERT_NE(tiled, nullptr);
  if (cuda::device_sm_count() != 132) GTEST_SKIP() << "the expectations are for 132 SMs";
  struct Expected {
    const char* model;
    int tokens, splits, tile_tokens;  // tile_tokens 0: not checked here
  };
  const Expected expected[] = {
      {"Qwen3-30B-A3B", 512, 1, 64}, {"Qwen3-Next-80B-A3B", 512, 2, 64},
      {"DeepSeek-V3", 512, 1, 128},  {"Mixtral-8x7B", 512, 1, 256},
      {"Qwen3-30B-A3B", 4096, 1, 0}, {"Qwen3-Next-80B-A3B", 4096, 1, 0},
      {"Qwen3-30B-A3B", 8, 4, 0},    {"Qwen3-Next-80B-A3B", 64, 4, 32},
      {"Qwen3-30B-A3B", 1, 4, 0},    {"DeepSeek-V3", 1, 2, 0},
      {"gpt-oss-120b", 1, 1, 0}};
  const bool device_answers = cuda::sm90::bf16_split_clusters(0, 2) > 0;
  for (const Expected& e : expected) {
    const check::ModelPreset* model = nullptr;
    for (const check::ModelPreset& m : check::model_presets())
      if (m.display == std::string(e.model)) model = &m;
    ASSERT_NE(model, nullptr) << e.model;
    const std::int32_t offsets[2] = {0, e.tokens};
    cuda::Problem problem = dense_problem(*model, offsets);
    EXPECT_LE(tiled->plan(problem, cuda::RowWindow{}).splits, 1) << e.model << " NVFP4";
    problem.nvfp4 = false;
    const cuda::Plan plan = tiled->plan(problem, cuda::RowWindow{});
    // On a device, fewer ranges where the clusters would not run in one wave.
    if (device_answers)
      EXPECT_LE(std::max(plan.splits, 1), e.splits) << e.model << " T = " << e.tokens;
    else
      EXPECT_EQ(std::max(plan.splits, 1), e.splits) << e.model << " T = " << e.tokens;
    EXPECT_TRUE(plan.splits <= 1 || !cuda::sm90::kTiles[plan.config].specialized) << e.model;
    if (e.tile_tokens > 0) {
      EXPECT_EQ(cuda::sm90::kTiles[plan.config].tokens, e.tile_tokens)
          << e.model << " T = " << e.tokens;
    }
  }
}

// Stream-K (stream_k_plan) runs where METRALE_CUDA_DENSE_SCHEDULE asks for it: =stream-k on the
// CTA-synchronised twin of the grid's tile, K whole, wherever that tile has it (=stream-k-pairs
// in clusters of 2), its label saying so and its workspace holding a tile of sums a CTA; the
// family's own plan (unset, =auto) is the tile grid's (=tiles); NVFP4 weights never. Over the
// bench's dense shapes at M = 48 to 16384. Host logic.
TEST(TiledFamily, DenseGemmsRunStreamKWhereAskedFor) {
  const cuda::Family* tiled = cuda::find_family("sm90-tiled");
  ASSERT_NE(tiled, nullptr);
  const long sms = cuda::device_sm_count();
  int streamed = 0;
  for (const check::ModelPreset& model : check::model_presets())
    for (int tokens : {48, 64, 512, 1024, 4096, 16384}) {
      const std::int32_t offsets[2] = {0, tokens};
      cuda::Problem problem = dense_problem(model, offsets);
      EXPECT_EQ(tiled->plan(problem, cuda::RowWindow{}).stream_k, 0) << model.display;  // NVFP4
      problem.nvfp4 = false;
      cuda::Plan grid;
      {
        const check::ScopedVariable tiles("METRALE_CUDA_DENSE_SCHEDULE", "tiles");
        grid = tiled->plan(problem, cuda::RowWindow{});
      }
      const cuda::Plan own = tiled->plan(problem, cuda::RowWindow{});
      const std::string where =
          fmt::format("{} M = {}: {}", model.display, tokens, tiled->describe(grid));
      EXPECT_EQ(own.stream_k, 0) << where;
      EXPECT_EQ(own.config, grid.config) << where;
      EXPECT_EQ(own.splits, grid.splits) << where;
      for (const auto& [schedule, cluster] : {std::pair{"stream-k", 1}, {"stream-k-pairs", 2}}) {
        const check::ScopedVariable forced("METRALE_CUDA_DENSE_SCHEDULE", schedule);
        const cuda::Plan plan = tiled->plan(problem, cuda::RowWindow{});
        const cuda::sm90::TileConfig& t = cuda::sm90::kTiles[plan.config];
        if (!cuda::sm90::has_stream_k(plan.config)) {
          EXPECT_EQ(plan.stream_k, 0) << where;
          continue;
        }
        ++streamed;
        EXPECT_EQ(plan.stream_k, cluster) << where;
        EXPECT_FALSE(t.specialized) << where;
        EXPECT_EQ(t.tokens, cuda::sm90::kTiles[grid.config].tokens) << where;
        EXPECT_LE(plan.splits, 1) << where;
        EXPECT_TRUE(
            tiled->describe(plan).ends_with(cluster == 1 ? " stream-k" : " stream-k cluster=2"))
            << where;
        const std::size_t sums = static_cast<std::size_t>(cluster == 1 ? sms : 2) * t.tokens *
                                 t.weight_rows * sizeof(float);
        EXPECT_GE(tiled->workspace_bytes(problem, plan), sums) << where;
      }
    }
  EXPECT_GT(streamed, 0);
}

// Device offsets cannot be read on the host, so the family prices their experts as uniform
// routing would spread them; on such a routing it must choose the tile host offsets get. Over the
// presets at every T where the tiled family takes device offsets (more than kDecodeMaxMeanRows
// rows an expert on average; host offsets give it the experts past kDecodeMaxRows). Pricing
// every expert at the mean chose the 128-token tile for DeepSeek-V3 and gpt-oss at T = 4096 and
// Mixtral at 512, where host offsets get the faster 256-token one (docs/perf.md, "2026-12-02,
// sixth session"). Host logic.
TEST(TiledFamily, DeviceOffsetsChooseAsHostOffsetsOnUniformRouting) {
  const cuda::Family* tiled = cuda::find_family("sm90-tiled");
  ASSERT_NE(tiled, nullptr);
  for (const check::ModelPreset& model : check::model_presets())
    for (int tokens : {512, 1024, 4096, 16384}) {
      const check::RoutingPlan routing =
          check::make_routing({tokens, model.experts, model.top_k, RoutingKind::uniform}, 11);
      if (routing.m_total <= cuda::kDecodeMaxMeanRows * model.experts) continue;  // decode's
      for (bool gate_up : {true, false}) {
        cuda::Problem problem;
        problem.args.n = gate_up ? model.inter : model.hidden;
        problem.args.k = gate_up ? model.hidden : model.inter;
        problem.args.proj_count = gate_up ? 2 : 1;
        problem.args.groups = ExpertGroups{routing.offsets.data(), false, model.experts,
                                           routing.m_total, routing.max_rows};
        const int host = tiled->plan(problem, cuda::RowWindow{cuda::kDecodeMaxRows + 1}).config;
        problem.args.groups.offsets_on_device = true;
        problem.args.groups.max_rows_per_expert = tokens;  // the MoE layer's bound
        const int device = tiled->plan(problem, cuda::RowWindow{}).config;
        EXPECT_EQ(device, host) << model.display << (gate_up ? " gate_up" : " down")
                                << " T = " << tokens;
      }
    }
}

// The order the tiles run in (raster_tile): every tile of channel_tiles x row_tiles exactly once,
// and the first band's tiles (the first to run) within its row tiles, on grids with a partial
// last band and with fewer rows than a band; bands of one row tile are row by row, channel
// fastest. Host logic.
TEST(TiledFamily, RasterVisitsEveryTileOnceBandByBand) {
  for (int band : {1, cuda::sm90::kRasterRows})
    for (int channels : {1, 3, 12, 45, 224})
      for (int rows : {1, 5, 8, 9, 16, 67}) {
        std::vector<int> seen(static_cast<std::size_t>(channels) * rows, 0);
        for (int t = 0; t < channels * rows; ++t) {
          const cuda::sm90::TileCoord at = cuda::sm90::raster_tile(t, channels, rows, band);
          ASSERT_TRUE(at.channel >= 0 && at.channel < channels && at.row >= 0 && at.row < rows)
              << channels << " x " << rows << " tile " << t << " band " << band;
          ++seen[static_cast<std::size_t>(at.row) * channels + at.channel];
          if (t < channels * std::min(rows, band)) {
            EXPECT_LT(at.row, band) << t;
          }
          if (band == 1) {
            EXPECT_TRUE(at.channel == t % channels && at.row == t / channels) << t;
          }
        }
        EXPECT_EQ(std::count(seen.begin(), seen.end(), 1), channels * rows)
            << channels << " x " << rows << " band " << band;
      }
}

// A single GEMM of 33 to 64 rows takes two 32-token row tiles while its weights fit in L2 (the
// second reads them from there), else one 64-token tile; fewer rows keep the mean rule (twice the
// rows: 8, 16, 32 or 64 tokens). Over the bench's dense shapes. Host logic (the L2 size is the
// current device's; without one, the H200's).
TEST(TiledFamily, SingleGemmTilesByItsExactRows) {
  const cuda::Family* tiled = cuda::find_family("sm90-tiled");
  ASSERT_NE(tiled, nullptr);
  for (const check::ModelPreset& model : check::model_presets())
    for (int rows : {1, 4, 5, 8, 9, 16, 17, 32, 33, 64}) {
      const std::int32_t offsets[2] = {0, rows};
      cuda::Problem problem = dense_problem(model, offsets);
      problem.nvfp4 = false;
      const cuda::sm90::TileConfig& tile =
          cuda::sm90::kTiles[tiled->plan(problem, cuda::RowWindow{}).config];
      const bool fits_l2 = 2.0 * problem.args.n * problem.args.k <= cuda::device_l2_bytes();
      const int tokens = rows <= 4    ? 8
                         : rows <= 8  ? 16
                         : rows <= 16 ? 32
                         : rows <= 32 ? 64
                                      : (fits_l2 ? 32 : 64);
      EXPECT_EQ(tile.tokens, tokens) << model.display << ", " << rows << " rows";
      EXPECT_FALSE(tile.specialized) << model.display << ", " << rows << " rows";
    }
}

// A CTA-synchronised grid holds at most 65535 row tiles (grid.y): a dense bf16 GEMM past that
// (more than 16.7 M rows on the 256-token tile) runs on the same tile's persistent twin instead
// of being refused; one row tile fewer keeps the CTA-synchronised tile. Host logic.
TEST(TiledFamily, Bf16RowsPastTheGridTakeThePersistentTwin) {
  const cuda::Family* tiled = cuda::find_family("sm90-tiled");
  ASSERT_NE(tiled, nullptr);
  const cuda::sm90::TileConfig& wide = cuda::sm90::kTiles[cuda::sm90::kBf16WideTile];
  for (const int rows : {65535 * wide.tokens, 65535 * wide.tokens + 1}) {
    const std::int32_t offsets[2] = {0, rows};
    cuda::Problem problem = dense_problem(check::model_presets().front(), offsets);
    problem.nvfp4 = false;
    const cuda::Plan plan = tiled->plan(problem, cuda::RowWindow{});
    const cuda::sm90::TileConfig& tile = cuda::sm90::kTiles[plan.config];
    EXPECT_EQ(tile.tokens, wide.tokens) << rows << " rows";
    EXPECT_EQ(tile.weight_rows, wide.weight_rows) << rows << " rows";
    EXPECT_EQ(tile.specialized, rows > 65535 * wide.tokens) << rows << " rows";
  }
}

#endif  // METRALE_HAS_CUDA
}  // namespace
}  // namespace metrale::cuda_test
