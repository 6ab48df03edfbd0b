// The tiled family forced at every tile (configuration), exact mode bit for bit against the
// oracle, each case run twice by the harness (determinism): grouped gate/up and down on host and
// device offsets with an expert wider than the widest token tile (300 rows: two 256-row tiles, a
// partial one last), N and K off the tile edges; the dense NVFP4 and bf16 GEMMs at M past each
// token width. The dispatcher reaches only some tiles for a given shape; this reaches them all.
// The persistent warp-specialised tiles with several tiles per CTA, and under tile churn; partial
// tiles at each token width; the decoder-warpgroup tiles (on prepacked weights in the halves'
// layout, METRALE_PREPACKED_LAYOUT=halves). Every tile on prepacked weights in the fragment order
// (the default), the decoder-warpgroup ones refusing them, and the dispatcher's own choice on
// them. Which tile the family picks:
// tiled_choice_test.cpp; the decoded tile's layout: decoded_tile_test.cpp.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <iterator>
#include <thread>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "cuda_test_support.hpp"

#ifdef METRALE_HAS_CUDA
#include <cuda_runtime.h>

#include "check/grouped.hpp"
#include "check/routing.hpp"
#include "check/scoped_kernel.hpp"
#include "cuda/family.hpp"
#include "cuda/sm90/tiled/tiled_params.hpp"
#endif

namespace metrale::cuda_test {
namespace {

#ifdef METRALE_HAS_CUDA

int tiled_configs() {
  return cuda::find_family("sm90-tiled")->config_count();
}

// Grouped gate/up and down at tile `config` in exact mode, on host and device offsets (seeds
// `seed` onward); counts the failing cases in `failures` and says whether to go on.
bool grouped_exact(int config, int n, int k, const check::Routing& routing, std::uint64_t seed,
                   int& failures) {
  for (Op op : {Op::grouped_gate_up_fused, Op::grouped_down})
    for (bool device_offsets : {false, true}) {
      check::Case c = grouped_case(op, Mode::exact, n, k, routing, seed++);
      c.cuda_kernel = fmt::format("sm90-tiled:{}", config);
      c.device_offsets = device_offsets;
      if (!expect_pass(c) && ++failures >= kMaxReportedFailures) return false;
    }
  return true;
}

TEST(TiledFamily, EveryTileGroupedExact) {
  METRALE_SKIP_WITHOUT_GPU();
  const check::Routing routings[] = {{300, 4, 1, RoutingKind::one_expert},
                                     {97, 8, 2, RoutingKind::skew}};
  std::uint64_t seed = 9100;
  int failures = 0;
  for (int config = 0; config < tiled_configs(); ++config)
    for (const check::Routing& routing : routings)
      if (!grouped_exact(config, 200, 1056, routing, seed += 4, failures)) return;
}

TEST(TiledFamily, EveryTileDenseExact) {
  METRALE_SKIP_WITHOUT_GPU();
  int failures = 0;
  for (int config = 0; config < tiled_configs(); ++config)
    for (Op op : {Op::nvfp4_gemm, Op::bf16_gemm})
      for (int m : {1, 129, 300}) {
        check::Case c = gemm_case(op, Mode::exact, m, 65, 96, 9200 + config * 7 + m);
        c.cuda_kernel = fmt::format("sm90-tiled:{}", config);
        if (!expect_pass(c) && ++failures >= kMaxReportedFailures) return;
      }
}

// K splits of the bf16 GEMM (fold_cluster on the narrow tiles, fold_splits through the workspace
// on the wide ones): every CTA-synchronised tile forced at 2, 3 and 8 K ranges (8: a whole
// portable cluster), M past its token width, N off the channel tiles, K = 1056 (17 k-tiles:
// ranges of unequal length) and K = 96 (2 k-tiles: past two ranges some are empty). Exact mode
// bit for bit and realistic mode within the harness's tolerance; the harness runs each case twice
// and wants the same bits (both folds add the ranges in range order, whichever CTA finishes
// first). Then the dispatcher's own splits through the public call and the workspace its size
// query gives: M = 512, N = 1024 and 1536, K = 2048 (a small grid: the 64-token tile, in 2
// ranges and whole on 132 SMs) and the decode sizes M = 1 and 8 (the 8- and 16-token tiles,
// N = 1536: 24 tiles, 4 ranges).
TEST(TiledFamily, Bf16KSplitsExactAndRealistic) {
  METRALE_SKIP_WITHOUT_GPU();
  int failures = 0;
  std::uint64_t seed = 9600;
  for (Mode mode : {Mode::exact, Mode::realistic}) {
    for (int n : {1024, 1536})
      if (!expect_pass(gemm_case(Op::bf16_gemm, mode, 512, n, 2048, seed++))) ++failures;
    for (int m : {1, 8})
      if (!expect_pass(gemm_case(Op::bf16_gemm, mode, m, 1536, 2048, seed++))) ++failures;
  }
  for (int config = 0; config < tiled_configs(); ++config) {
    const cuda::sm90::TileConfig& tile = cuda::sm90::kTiles[config];
    if (tile.specialized) continue;
    for (int splits : {2, 3, 8})
      for (int k : {96, 1056})
        for (Mode mode : {Mode::exact, Mode::realistic}) {
          check::Case c = gemm_case(Op::bf16_gemm, mode, tile.tokens + 3, 200, k, seed++);
          c.cuda_kernel = fmt::format("sm90-tiled:{}:{}", config, splits);
          if (!expect_pass(c) && ++failures >= kMaxReportedFailures) return;
        }
  }
}

// A dense bf16 GEMM's stages are copied by TMA (the default) or by the threads' cp.async
// (METRALE_CUDA_DENSE_COPY=cp.async): both bit for bit against the oracle on every tile, the
// CTA-synchronised ones whole and cut into 3 K ranges, at M past the token width (the last row
// tile partial: TMA reads zeros past M), N = 200 (a channel tile partial: zeros past N) and
// K = 1000 (a partial last k-tile: zeros past K) and 96 (3 ranges of 2 k-tiles: one is empty).
// The persistent tiles also at 3 row tiles x 47 channel tiles (N = 6000): more tiles than an
// H100 or H200 has multiprocessors, so CTAs walk a second tile on their stage ring.
TEST(TiledFamily, DenseCopiesByTmaAndCpAsyncExact) {
  METRALE_SKIP_WITHOUT_GPU();
  int failures = 0;
  std::uint64_t seed = 9900;
  for (const char* copy : {"tma", "cp.async"}) {
    const check::ScopedVariable copies("METRALE_CUDA_DENSE_COPY", copy);
    for (int config = 0; config < tiled_configs(); ++config) {
      const cuda::sm90::TileConfig& tile = cuda::sm90::kTiles[config];
      for (int splits : {1, 3})
        for (int k : {96, 1000}) {
          if (tile.specialized && splits > 1) continue;
          check::Case c = gemm_case(Op::bf16_gemm, Mode::exact, tile.tokens + 5, 200, k, seed++);
          c.cuda_kernel = fmt::format("sm90-tiled:{}:{}", config, splits);
          if (!expect_pass(c) && ++failures >= kMaxReportedFailures) return;
        }
      if (tile.specialized) {
        check::Case c =
            gemm_case(Op::bf16_gemm, Mode::exact, 2 * tile.tokens + 5, 6000, 96, seed++);
        c.cuda_kernel = fmt::format("sm90-tiled:{}", config);
        if (!expect_pass(c) && ++failures >= kMaxReportedFailures) return;
      }
    }
  }
}

// Stream-K (METRALE_CUDA_DENSE_SCHEDULE=stream-k, and stream-k-pairs: clusters of 2 CTAs, each
// copying half of the weight rows for both, the second CTA's rows past M on odd row-tile counts)
// forced on each of its tiles, exact mode bit for bit and realistic mode within the harness's
// tolerance, the harness's second run giving the same bits (the CTA finishing a tile adds the
// others' sums in a fixed order, whichever arrives first): K = 96 (2 k-tiles: a CTA a k-tile, every
// tile cut in two), 1000 (a partial last k-tile) and 4160 (65 k-tiles over 4 tiles: about 33 CTAs
// share each tile); M past the token width (a partial row tile); N = 200 (a partial channel tile)
// and 6000 (more tiles than CTAs: runs of whole tiles between a head and a tail); M = 1 (one k-tile
// a tile: whole tiles only); the refusal of stream-K forced on a tile without it. Then, unforced,
// the family's own plans of three dense shapes through the public call (the tile grid: stream-K
// runs only where asked; when this test first ran, on the H200 of calls 1 and 2 of the
// forty-fifth session, the family still took stream-K at M = 512, N = 1536).
TEST(TiledFamily, DenseStreamKExactAndRealistic) {
  METRALE_SKIP_WITHOUT_GPU();
  int failures = 0;
  std::uint64_t seed = 9950;
  for (const char* pairs : {"stream-k", "stream-k-pairs"}) {
    const check::ScopedVariable schedule("METRALE_CUDA_DENSE_SCHEDULE", pairs);
    for (int config : cuda::sm90::kStreamKTiles) {
      const int tokens = cuda::sm90::kTiles[config].tokens;
      const int shapes[][3] = {{tokens + 5, 200, 96},
                               {tokens + 5, 200, 1000},
                               {2 * tokens + 5, 200, 4160},
                               {3 * tokens + 5, 6000, 200},
                               {1, 136, 64}};
      for (const auto& [m, n, k] : shapes)
        for (Mode mode : {Mode::exact, Mode::realistic}) {
          check::Case c = gemm_case(Op::bf16_gemm, mode, m, n, k, seed++);
          c.cuda_kernel = fmt::format("sm90-tiled:{}", config);
          if (!expect_pass(c) && ++failures >= kMaxReportedFailures) return;
        }
    }
    check::Case refused = gemm_case(Op::bf16_gemm, Mode::exact, 300, 200, 96, seed++);
    refused.cuda_kernel = "sm90-tiled:4";  // warp-specialised: no stream-K kernel
    const check::Report report = check::run_case(refused);
    EXPECT_EQ(report.outcome, check::Outcome::skip);  // refused as unsupported
    EXPECT_NE(report.detail.find("no stream-K kernel"), std::string::npos) << report.detail;
  }
  for (Mode mode : {Mode::exact, Mode::realistic})
    for (const auto& [m, n] : {std::pair{512, 1536}, {512, 1024}, {4096, 1536}})
      if (!expect_pass(gemm_case(Op::bf16_gemm, mode, m, n, 2048, seed++))) ++failures;
}

// The warp-specialised tiles are persistent: at most one CTA per multiprocessor walks the tiles,
// so a CTA reuses its stage ring and its tile hand-over from tile to tile. Here every CTA takes
// several tiles (16 channel tiles x 2 projections x 9 or more row tiles on at most 132 CTAs), on
// skewed routing (row tiles of different lengths back to back), host and device offsets.
TEST(TiledFamily, PersistentTilesExact) {
  METRALE_SKIP_WITHOUT_GPU();
  int failures = 0;
  for (int config = 0; config < tiled_configs(); ++config) {
    if (!cuda::sm90::kTiles[config].specialized) continue;
    if (!grouped_exact(config, 2048, 96, {1100, 8, 2, RoutingKind::skew}, 9300 + 4 * config,
                       failures))
      return;
  }
}

// Waits for the default stream's work; after 30 s says a kernel hung and ends the process (a hung
// kernel cannot be stopped from inside it), which fails the test.
void finish_or_exit(const std::string& kernel, int launches) {
  const auto start = std::chrono::steady_clock::now();
  while (cudaStreamQuery(nullptr) == cudaErrorNotReady) {
    if (std::chrono::steady_clock::now() - start > std::chrono::seconds(30)) {
      std::fprintf(stderr, "%s: %d launches did not finish in 30 s: a hung kernel\n",
                   kernel.c_str(), launches);
      std::_Exit(EXIT_FAILURE);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

// The warp-specialised tiles under tile churn: many short tiles back to back (256 experts of
// about 16 rows, K = 512), where the consumers wait for each tile and the producer's warps drift
// apart: the pattern that hung the GPU until the sixth session of 2026-12-02 (docs/perf.md: a
// lagging producer warp waiting for a tile_empty phase the consumers had completed twice over).
// Each warp-specialised tile, forced, runs once, then 300 times, 25 back to back at a time (behind
// a hung kernel the launch queue fills and a launch call blocks); each batch must finish within
// 30 s, and every launch must give the first one's bits.
TEST(TiledFamily, WarpSpecialisedTilesFinishUnderTileChurn) {
  METRALE_SKIP_WITHOUT_GPU();
  constexpr int kLaunches = 300, kBatch = 25;
  const check::Routing churn{512, 256, 8, RoutingKind::uniform};
  const check::GroupedHost host = check::make_grouped_host(
      grouped_case(Op::grouped_gate_up_fused, Mode::realistic, 512, 512, churn, 9500));
  check::GroupedDevice device = check::upload_grouped(host);
  const GroupedNvfp4 args = check::device_args(host, device, true, host.routing.m_total);
  for (int config = 0; config < tiled_configs(); ++config) {
    if (!cuda::sm90::kTiles[config].specialized) continue;
    const std::string kernel = fmt::format("sm90-tiled:{}", config);
    const check::ScopedCudaKernel forced(kernel);
    ASSERT_TRUE(nvfp4_grouped(args, kCuda).ok()) << kernel;
    finish_or_exit(kernel, 1);
    const auto first = device.out[0].download<bf16_bits>();
    for (int batch = 0; batch < kLaunches / kBatch; ++batch) {
      for (int i = 0; i < kBatch; ++i) ASSERT_TRUE(nvfp4_grouped(args, kCuda).ok()) << kernel;
      finish_or_exit(kernel, kBatch);
    }
    ASSERT_EQ(cudaGetLastError(), cudaSuccess) << kernel;
    EXPECT_EQ(device.out[0].download<bf16_bits>(), first) << kernel;
  }
}

// A tile runs at its tile_width: an expert's rows cut into full tiles and a last one of whole
// chunks (configurations 8 and 9 run 128 tokens a wgmma). One expert per case, its rows chosen to
// land on each width, alone and after full tiles; every tile whose wgmmas come in chunks, and the
// warp-specialised ones (persistent: tiles of different widths back to back).
TEST(TiledFamily, EveryTileWidthExact) {
  METRALE_SKIP_WITHOUT_GPU();
  int failures = 0;
  std::uint64_t seed = 9400;
  for (int config = 0; config < tiled_configs(); ++config) {
    const cuda::sm90::TileConfig& tile = cuda::sm90::kTiles[config];
    if (tile.chunk == tile.tokens && !tile.specialized) continue;
    for (int rows : {20, 50, 100, 170, 250, 276, 400})
      if (!grouped_exact(config, 136, 96, {rows, 4, 1, RoutingKind::one_expert}, seed += 4,
                         failures))
        return;
  }
}

// The tiles with a decoder warpgroup (dws_kernel.cuh: the weights decoded once a stage into a
// ring of bf16 tiles), forced: the three grouped operations (gate/up fused on SFB scales; gate/up
// and down on [K/16, N] scales, read a byte at a time at N = 200 and 16 bytes at a time at
// N = 256), both weight layouts (the seeds' bytes and prepacked), host and device offsets, exact
// bit for bit and realistic. K = 1056 (17 k-tiles: many rounds of the stage ring and of the
// decoded ring, a partial last k-tile); N off the channel tiles; 4096 skewed rows over 64 experts
// (row tiles of every width, several tiles a CTA).
TEST(TiledFamily, DecoderWarpgroupTilesExactAndRealistic) {
  METRALE_SKIP_WITHOUT_GPU();
  struct Shape {
    Op op;
    int n;
  };
  const Shape shapes[] = {{Op::grouped_gate_up_fused, 200},
                          {Op::grouped_gate_up, 200},
                          {Op::grouped_gate_up, 256},
                          {Op::grouped_down, 200},
                          {Op::grouped_down, 256}};
  const check::Routing routing{1024, 64, 4, RoutingKind::skew};
  std::uint64_t seed = 9800;
  int failures = 0;
  for (int config = 0; config < tiled_configs(); ++config) {
    if (cuda::sm90::kTiles[config].decoded == 0) continue;
    for (const Shape& shape : shapes)
      for (bool prepacked : {false, true})
        for (bool device_offsets : {false, true})
          for (Mode mode : {Mode::exact, Mode::realistic}) {
            check::Case c = grouped_case(shape.op, mode, shape.n, 1056, routing, ++seed);
            c.cuda_kernel = fmt::format("sm90-tiled:{}", config);
            c.prepacked = prepacked;
            if (prepacked) c.prepacked_layout = "halves";  // the only prepacked layout they read
            c.device_offsets = device_offsets;
            if (!expect_pass(c) && ++failures >= kMaxReportedFailures) return;
          }
  }
}

// Prepacked weights in the fragment order (format/fragment_order.hpp; the default): every tile
// but the decoder-warpgroup ones reads them, exact bit for bit against the oracle (which decodes
// the same order), on K with a 32-code tail (1056: its last stage in the halves' layout) and
// without (1024), host and device offsets, one wide expert and a skewed routing.
check::Case fragment_case(Op op, int k, const check::Routing& routing, std::uint64_t seed) {
  check::Case c = grouped_case(op, Mode::exact, 200, k, routing, seed);
  c.prepacked = true;
  c.prepacked_layout = "fragments";
  return c;
}

TEST(TiledFamily, EveryTileOnTheFragmentOrderExact) {
  METRALE_SKIP_WITHOUT_GPU();
  const check::Routing routings[] = {{300, 4, 1, RoutingKind::one_expert},
                                     {97, 8, 2, RoutingKind::skew}};
  std::uint64_t seed = 9900;
  int failures = 0;
  for (int config = 0; config < tiled_configs(); ++config) {
    if (cuda::sm90::kTiles[config].decoded > 0) continue;
    for (const check::Routing& routing : routings)
      for (int k : {1056, 1024})
        for (Op op : {Op::grouped_gate_up_fused, Op::grouped_down})
          for (bool device_offsets : {false, true}) {
            check::Case c = fragment_case(op, k, routing, ++seed);
            c.cuda_kernel = fmt::format("sm90-tiled:{}", config);
            c.device_offsets = device_offsets;
            if (!expect_pass(c) && ++failures >= kMaxReportedFailures) return;
          }
  }
}

// The decoder-warpgroup tiles refuse the fragment order, naming it; the dispatcher's own choice
// (the decode family for the few-row experts, the tiled family for the rest) reads it at decode
// and prefill sizes, at K with and without a 32-code tail.
TEST(TiledFamily, FragmentOrderRefusedByDecoderTilesAndChosenOtherwise) {
  METRALE_SKIP_WITHOUT_GPU();
  for (int config = 0; config < tiled_configs(); ++config) {
    if (cuda::sm90::kTiles[config].decoded == 0) continue;
    check::Case c = fragment_case(Op::grouped_down, 1024, {64, 4, 2, RoutingKind::uniform}, 9990);
    c.cuda_kernel = fmt::format("sm90-tiled:{}", config);
    const check::Report r = check::run_case(c);
    EXPECT_FALSE(r.passed()) << config;
    EXPECT_NE(r.detail.find("METRALE_PREPACKED_LAYOUT=halves"), std::string::npos) << r.detail;
  }
  std::uint64_t seed = 9995;
  for (int k : {1024, 1056})
    for (int tokens : {1, 8, 600})
      for (Op op : {Op::grouped_gate_up_fused, Op::grouped_down})
        expect_pass(fragment_case(op, k, {tokens, 16, 4, RoutingKind::uniform}, ++seed));
}

#endif  // METRALE_HAS_CUDA
}  // namespace
}  // namespace metrale::cuda_test
