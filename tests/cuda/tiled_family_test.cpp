// The tiled family forced at every tile (configuration), exact mode bit for bit against the
// oracle, each case run twice by the harness (determinism): grouped gate/up and down on host and
// device offsets with an expert wider than the widest token tile (300 rows: two 256-row tiles, a
// partial one last), N and K off the tile edges; the dense NVFP4 and bf16 GEMMs at M past each
// token width. The dispatcher reaches only some tiles for a given shape; this reaches them all.
// The persistent warp-specialised tiles with several tiles per CTA, and under tile churn; partial
// tiles at each token width. Then the rule that decides for the widest tile, against the measured
// choices, and which tiles the family picks itself.
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
#include "cuda/sm90/tiled/decoded_tile.hpp"
#include "cuda/sm90/tiled/tiled_params.hpp"
#include "format/bf16.hpp"
#include "format/e2m1.hpp"
#include "format/e4m3.hpp"
#include "format/prepack.hpp"
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
// query gives: M = 512, N = 1024, K = 2048 (the 128-token tile, 4 ranges on 132 SMs) and the
// decode sizes M = 1 and 8 (the 8- and 16-token tiles, N = 1536: 24 tiles, 4 ranges).
TEST(TiledFamily, Bf16KSplitsExactAndRealistic) {
  METRALE_SKIP_WITHOUT_GPU();
  int failures = 0;
  std::uint64_t seed = 9600;
  for (Mode mode : {Mode::exact, Mode::realistic}) {
    if (!expect_pass(gemm_case(Op::bf16_gemm, mode, 512, 1024, 2048, seed++))) ++failures;
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
            c.device_offsets = device_offsets;
            if (!expect_pass(c) && ++failures >= kMaxReportedFailures) return;
          }
  }
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
    EXPECT_TRUE(std::any_of(std::begin(cuda::sm90::kChosenTiles),
                            std::end(cuda::sm90::kChosenTiles),
                            [&](int c) {
                              const cuda::sm90::TileConfig& o = cuda::sm90::kTiles[c];
                              return o.specialized && o.tokens == t.tokens &&
                                     o.weight_rows == t.weight_rows && o.chunk == t.chunk;
                            }))
        << t.tokens << " tokens";
  }
  EXPECT_EQ(decoder_tiles, 2);
}

// The tiles whose chunks issue their four k16 wgmmas in one asm statement (step_batch) are
// reached only when forced and are the family's own tiles otherwise (same tokens, weight rows,
// stages, roles and chunk), so that a measurement compares the issue alone. Host logic.
TEST(TiledFamily, StepBatchTilesAreForcedTwinsOfChosenTiles) {
  int batched = 0;
  for (int c : cuda::sm90::kChosenTiles) EXPECT_FALSE(cuda::sm90::kTiles[c].step_batch) << c;
  for (const cuda::sm90::TileConfig& t : cuda::sm90::kTiles) {
    if (!t.step_batch) continue;
    ++batched;
    EXPECT_TRUE(std::any_of(std::begin(cuda::sm90::kChosenTiles),
                            std::end(cuda::sm90::kChosenTiles),
                            [&](int c) {
                              const cuda::sm90::TileConfig& o = cuda::sm90::kTiles[c];
                              return o.specialized == t.specialized && o.tokens == t.tokens &&
                                     o.weight_rows == t.weight_rows && o.stages == t.stages &&
                                     o.chunk == t.chunk && o.decoded == t.decoded;
                            }))
        << t.tokens << " tokens";
  }
  EXPECT_EQ(batched, 1);
}

// Where the decoder puts a weight row's value of k in a decoded tile (decoded_chunk_offset, and
// pairs_by_k's order within a chunk), against the 128-byte swizzle as wgmma reads a K-major bf16
// tile through sw128_descriptor: the linear offset 128 row + 2 k with its bits 4..6 XORed with
// bits 7..9. Every byte of the 16 KB tile is written exactly once. Host logic.
TEST(DecodedTile, EveryRowAndKLandsWhereTheSwizzledDescriptorReadsIt) {
  std::vector<int> writes(128 * cuda::sm90::kDecodedRowBytes, 0);
  for (int row = 0; row < 128; ++row)
    for (int word = 0; word < 8; ++word) {
      // A word's pairs labelled by their k: pair j = {8 word + j, 8 word + 4 + j}.
      std::uint32_t pairs[4], chunk[4];
      for (int j = 0; j < 4; ++j)
        pairs[j] = static_cast<std::uint32_t>(8 * word + j) |
                   static_cast<std::uint32_t>(8 * word + 4 + j) << 16;
      cuda::sm90::pairs_by_k(pairs, chunk);
      for (int e = 0; e < 8; ++e) {
        const int k = static_cast<int>(chunk[e / 2] >> (16 * (e % 2)) & 0xFFFFu);
        EXPECT_EQ(k, 8 * word + e) << "row " << row << " word " << word << " element " << e;
        const int at = cuda::sm90::decoded_chunk_offset(row, word) + 2 * e;
        const int linear = row * cuda::sm90::kDecodedRowBytes + 2 * k;
        EXPECT_EQ(at, linear ^ ((linear >> 7 & 7) << 4)) << "row " << row << " k " << k;
        ++writes[at];
        ++writes[at + 1];
      }
    }
  EXPECT_EQ(std::count(writes.begin(), writes.end(), 1), static_cast<long>(writes.size()));
}

// The decoded values of a stage's row in both weight layouts: the bit moves' contract
// (fp4_bits.cuh: pair j of a word = {code j, code j + 4} of its eight codes in the seeds' nibble
// order, or {code j of the low half, code j of the high half} prepacked: both k = 8 word + j and
// + 4 + j), times the scale of step word / 2, re-paired by pairs_by_k and placed by
// decoded_chunk_offset, read back at (row, k): e2m1(k) x s x 2^-7 as the oracle dequantizes the
// seeds' bytes, exact in bf16. Random codes and scales over 200 rows. Host logic.
TEST(DecodedTile, ValuesAndKOrderMatchBothWeightLayouts) {
  std::uint64_t state = 0x9E3779B97F4A7C15ull;
  auto next = [&] {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    return static_cast<std::uint32_t>(state >> 32);
  };
  for (int trial = 0; trial < 200; ++trial) {
    const int row = trial % 128;
    std::uint8_t bytes[32];  // the seeds' row: byte b holds k = 2b (low nibble) and 2b + 1
    for (std::uint8_t& b : bytes) b = static_cast<std::uint8_t>(next());
    std::uint8_t scale[4];  // steps 0..3: finite e4m3 codes
    for (std::uint8_t& s : scale) s = static_cast<std::uint8_t>(next() % 0x7F);
    for (bool prepacked : {false, true}) {
      std::uint8_t tile[128 * cuda::sm90::kDecodedRowBytes] = {};
      for (int word = 0; word < 8; ++word) {
        std::uint32_t codes = 0;
        for (int b = 0; b < 4; ++b)
          codes |= static_cast<std::uint32_t>(bytes[4 * word + b]) << 8 * b;
        if (prepacked) codes = format::prepack_word(codes);
        // The pairs as the bit moves give them, here from the layout's definition.
        auto code = [&](int j, int half) {
          const std::uint32_t seeds = prepacked ? format::unprepack_word(codes) : codes;
          return static_cast<std::uint8_t>(seeds >> (4 * (j + 4 * half)) & 0xFu);
        };
        const float s = format::e4m3_to_float(scale[word / 2]) / 128.0f;
        std::uint32_t pairs[4], chunk[4];
        for (int j = 0; j < 4; ++j)
          pairs[j] = format::float_to_bf16(format::e2m1_to_float(code(j, 0)) * s) |
                     static_cast<std::uint32_t>(
                         format::float_to_bf16(format::e2m1_to_float(code(j, 1)) * s))
                         << 16;
        cuda::sm90::pairs_by_k(pairs, chunk);
        for (int e = 0; e < 8; ++e) {
          const std::uint16_t value = static_cast<std::uint16_t>(chunk[e / 2] >> (16 * (e % 2)));
          const int at = cuda::sm90::decoded_chunk_offset(row, word) + 2 * e;
          tile[at] = static_cast<std::uint8_t>(value);
          tile[at + 1] = static_cast<std::uint8_t>(value >> 8);
        }
      }
      for (int k = 0; k < 64; ++k) {
        const int linear = row * cuda::sm90::kDecodedRowBytes + 2 * k;
        const int at = linear ^ ((linear >> 7 & 7) << 4);
        const auto got = static_cast<std::uint16_t>(tile[at] | tile[at + 1] << 8);
        const std::uint8_t oracle_code = (bytes[k / 2] >> (4 * (k % 2))) & 0xF;
        const float want =
            format::e2m1_to_float(oracle_code) * format::e4m3_to_float(scale[k / 16]) / 128.0f;
        EXPECT_EQ(format::bf16_to_float(got), want)
            << "row " << row << " k " << k << (prepacked ? " prepacked" : " seeds");
      }
    }
  }
}

// The widest tile's grid rule against the choices measured on the H200 (132 SMs; docs/perf.md,
// "the 256-token tile"): the bench's dense shapes (N = channel tiles x 128) at M = 512 and 4096,
// and the grouped gate_up of Qwen3-Next and DeepSeek-V3 at T = 4096. Host logic: runs anywhere.
TEST(TiledFamily, WideTileRuleMatchesTheMeasuredChoices) {
  struct Measured {
    const char* shape;
    long channel_tiles, wide_row_tiles, narrow_row_tiles;
    bool wide_was_faster;
  };
  const Measured measured[] = {
      {"Qwen3 dense M=512 (N=1536): 28.5 us wide, 19.6 narrow", 12, 2, 4, false},
      {"DeepSeek-V3 dense M=512 (N=4096): 73.4 vs 57.9", 32, 2, 4, false},
      {"Qwen3-Next dense M=512 (N=1024): 27.1 vs 18.5", 8, 2, 4, false},
      {"gpt-oss dense M=512 (N=5760): 36.9 vs 53.1", 45, 2, 4, true},
      {"Mixtral dense M=512 (N=28672): 246 vs 321", 224, 2, 4, true},
      {"DeepSeek-V3 dense M=4096: 373 vs 485", 32, 16, 32, true},
      {"Qwen3-Next dense M=4096: 30.4 vs 36.5", 8, 16, 32, true},
      {"Mixtral dense M=4096: 1724 vs 2608", 224, 16, 32, true},
      // 512 experts of about 80 rows: one tile each either way.
      {"Qwen3-Next gate_up T=4096 (2 x 4 channel tiles): 1071 vs 847", 8, 512, 520, false},
      // 256 experts of about 128 rows: about half need a second 128-token tile.
      {"DeepSeek-V3 gate_up T=4096 (2 x 16 channel tiles): 6406 vs 7369", 32, 256, 390, true},
  };
  using cuda::sm90::TileLoad;
  using cuda::sm90::tile_time;
  for (const Measured& m : measured) {
    // Measured with full-width tiles (before tile_width).
    const long wide = m.channel_tiles * m.wide_row_tiles;
    const long narrow = m.channel_tiles * m.narrow_row_tiles;
    EXPECT_EQ(cuda::sm90::wide_tile_pays(TileLoad{wide, wide * tile_time(256)},
                                         TileLoad{narrow, narrow * tile_time(128)}, 132),
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

// bf16 weights (the dense GEMM) take the CTA-synchronised 256-token tile wherever NVFP4 weights
// of the same shape take the warp-specialised one, and the same tile elsewhere. Over the bench's
// dense shapes (M = T, N = 2 inter, K = hidden). Host logic.
TEST(TiledFamily, Bf16WeightsTakeTheCtaSynchronisedWideTile) {
  const cuda::Family* tiled = cuda::find_family("sm90-tiled");
  ASSERT_NE(tiled, nullptr);
  ASSERT_FALSE(cuda::sm90::kTiles[cuda::sm90::kBf16WideTile].specialized);
  ASSERT_EQ(cuda::sm90::kTiles[cuda::sm90::kBf16WideTile].tokens,
            cuda::sm90::kTiles[std::end(cuda::sm90::kChosenTiles)[-1]].tokens);
  int wide = 0;
  for (const check::ModelPreset& model : check::model_presets())
    for (int tokens : {512, 4096, 16384}) {
      const std::int32_t offsets[2] = {0, tokens};
      cuda::Problem problem = dense_problem(model, offsets);
      const int nvfp4 = tiled->plan(problem, cuda::RowWindow{}).config;
      problem.nvfp4 = false;
      const cuda::Plan bf16 = tiled->plan(problem, cuda::RowWindow{});
      const bool widest = nvfp4 == std::end(cuda::sm90::kChosenTiles)[-1];
      wide += widest;
      const int expected = widest ? cuda::sm90::kBf16WideTile : nvfp4;
      if (bf16.splits > 1) {  // a K split runs on the CTA-synchronised tile of the same shape
        EXPECT_FALSE(cuda::sm90::kTiles[bf16.config].specialized) << model.display;
        EXPECT_EQ(cuda::sm90::kTiles[bf16.config].tokens, cuda::sm90::kTiles[expected].tokens)
            << model.display << " T = " << tokens;
      } else {
        EXPECT_EQ(bf16.config, expected) << model.display << " T = " << tokens;
      }
    }
  EXPECT_GT(wide, 0);  // the shapes reach the wide tile
}

// Which bf16 GEMMs split K (split_small_grid), on 132 multiprocessors (an H200; the host count
// without a device): those whose tiles fill at most half of them, at least 8 k-tiles a range,
// at most 8 ranges (a cluster): the bench's dense M = 512 of Qwen3-30B (48 tiles of 128 x 128:
// 2 ranges) and Qwen3-Next (32 tiles: 4 ranges; at M = 64 too, two row tiles of 32), the
// 8- and 16-token tiles of M = 1 and 8 (Qwen3-30B: 24 tiles, 4 ranges; DeepSeek-V3: 64 tiles, 2
// ranges; gpt-oss: 90 tiles, none), nothing at 4096 rows; NVFP4 weights never. On a device, fewer
// ranges where the tiles' clusters would not all run at once. Host logic, but the counts are the
// current device's.
TEST(TiledFamily, SmallBf16GridsSplitK) {
  const cuda::Family* tiled = cuda::find_family("sm90-tiled");
  ASSERT_NE(tiled, nullptr);
  if (cuda::device_sm_count() != 132) GTEST_SKIP() << "the expectations are for 132 SMs";
  struct Expected {
    const char* model;
    int tokens, splits;
  };
  const Expected expected[] = {
      {"Qwen3-30B-A3B", 512, 2}, {"Qwen3-Next-80B-A3B", 512, 4}, {"DeepSeek-V3", 512, 1},
      {"Mixtral-8x7B", 512, 1},  {"Qwen3-30B-A3B", 4096, 1},     {"Qwen3-Next-80B-A3B", 4096, 1},
      {"Qwen3-30B-A3B", 8, 4},   {"Qwen3-Next-80B-A3B", 64, 4},  {"Qwen3-30B-A3B", 1, 4},
      {"DeepSeek-V3", 1, 2},     {"gpt-oss-120b", 1, 1}};
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
  }
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
