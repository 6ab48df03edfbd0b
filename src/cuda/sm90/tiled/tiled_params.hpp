// The parameter block of the tiled family's sm_90a kernel (tiled_kernel.cuh) and its tile table,
// shared by the family's host side (tiled_family.cpp) and the kernel's instantiations
// (tiled_kernel.cu). Plain host-compatible types: bf16 travels as its raw 16 bits. Per-expert
// tables and host offsets live in the workspace (cuda/stage/expert_table.hpp), not here.
#pragma once

// cuda.h for CUtensorMap, a type only: the maps are encoded through the runtime's entry point.
#include <cuda.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "cuda/stage/expert_table.hpp"

namespace metrale::cuda::sm90 {

constexpr int kBlockK = 64;  // K per pipeline stage: one 128-byte swizzled row of bf16

struct TileConfig {
  int tokens;        // wgmma N: group rows per CTA
  int weight_rows;   // output channels per CTA, 64 per consumer warpgroup
  int stages;        // cp.async pipeline depth
  bool specialized;  // a producer warpgroup, two consumers, mbarriers (ws_kernel.cuh)
  int chunk;         // tokens per wgmma: a k16 step issues tokens / chunk, none past the rows
  int decoded;       // NVFP4: a decoder warpgroup and a ring of this many decoded bf16 weight
                     // tiles (dws_kernel.cuh); 0: none
  bool step_batch = false;   // NVFP4: a chunk's four k16 wgmmas in one asm statement (rs4)
  bool quad_scales = false;  // NVFP4: a stage's block scales converted once a quad, shuffled
};

// Tiles by expected rows per expert; pick_tile (tiled_family.cpp) takes the smallest holding twice
// the mean, the widest only when its grid pays (wide_tile_pays), rules measured with
// `METRALE_CUDA_KERNEL=sm90-tiled:i metrale bench --impls metrale` (docs/perf.md). Stage counts:
// 12 and 16 measured slower for the decode tiles, 3 no faster than 4 for the 256-token tile. The
// 32- and 64-token tiles run the dense bf16 GEMM at M = 33-64, a CTA waiting on its copies (ncu:
// a quarter of the samples at the copy wait, another at the barrier behind it): 9 and 6 stages
// in place of 6 and 4, with the weight copies' L2 prefetch (stage_loader.cuh), measured 0.92-0.97x
// the time on DeepSeek-V3, Qwen3-30B and Mixtral there, 1.01-1.02x on Qwen3-Next, whose K ranges
// are 8 k-tiles (an H100, docs/perf.md, forty-second session). The 64-token tile also runs a
// dense GEMM whose wider tiles fill at most half of the SMs (narrow_small_grid, tiled_family.cpp).
// Small tiles use one warpgroup so that a decode step spreads over more CTAs; large ones share
// each activation tile between two. The 256-token tile halves the NVFP4 decode per tensor-core
// operation (each decoded weight feeds 256 rows): at prefill the decode, not the tensor core, is
// what limits the 128-token tile.
// Past 64 tokens the family picks the warp-specialised persistent tiles (ws_kernel.cuh; measured
// 0.77-0.95 of the CTA-synchronised tiles' time at T = 4096, docs/perf.md, "2026-12-02, sixth
// session"):
//  4:    128 tokens.
//  8:    256 tokens, its wgmmas 128 tokens at a time, so that an expert's last, partial tile
//        skips the half past its rows: measured 4-6 % faster than 5 (one 256-token wgmma) on
//        DeepSeek-V3 and gpt-oss at T = 4096, level elsewhere.
// 7, the CTA-synchronised 256-token tile (tiled_kernel.cuh), takes 8's place for bf16 weights
// (kBf16WideTile). Reached only when forced: 5; 6, the CTA-synchronised 128-token tile (the
// default until the sixth session); 9, 7 in 128-token chunks (measured 1.04-1.22x slower than 7
// at T = 4096); 10 and 11, 4 and 8 with a decoder warpgroup (dws_kernel.cuh: the NVFP4 weights
// decoded once a stage into shared memory, both wgmma operands from there; measured 1.05-1.20x
// and 1.14-1.40x the time of 4 and 8 on every preset at T = 4096 and 16384, an H100: the
// decoder's shared-memory round trip stalls it, docs/perf.md, twenty-second session),
// 10 with a decoded ring of 3, 11 with 3 stages to make room for a ring of 2; 12, 8 with each
// chunk's four k16 wgmmas in one asm statement (`Wgmma::rs4`, the descriptors added in PTX: the
// decode family's form since the thirteenth session), to measure the stage's ~48 uniform
// instructions (docs/perf.md, twenty-third session); 13, 8 with each stage's block scales
// converted once a quad (quad_scale_pairs: a thread converts one step's pair of the four, the
// quad shuffles them) and 14, 12 and 13 together, to measure the ~28 operations a stage and thread
// the scales cost (docs/perf.md, twenty-fourth session). bf16 weights on 10-14 run 4's and 8's
// kernels (bf16_twin: nothing to decode, no A fragments to issue from).
constexpr TileConfig kTiles[] = {
    {8, 64, 8, false, 8, 0},
    {16, 64, 8, false, 16, 0},
    {32, 64, 9, false, 32, 0},
    {64, 128, 6, false, 64, 0},
    {128, 128, 4, true, 128, 0},
    {256, 128, 4, true, 256, 0},
    {128, 128, 4, false, 128, 0},
    {256, 128, 4, false, 256, 0},
    {256, 128, 4, true, 128, 0},
    {256, 128, 4, false, 128, 0},
    {128, 128, 4, true, 128, 3},
    {256, 128, 3, true, 128, 2},
    {256, 128, 4, true, 128, 0, true},
    {256, 128, 4, true, 128, 0, false, true},
    {256, 128, 4, true, 128, 0, true, true},
};
constexpr int kTileCount = sizeof(kTiles) / sizeof(kTiles[0]);
// The tiles the family picks by itself (pick_tile, choose_tile), narrowest first; the others are
// reached only by METRALE_CUDA_KERNEL=sm90-tiled:<index>.
constexpr int kChosenTiles[] = {0, 1, 2, 3, 4, 8};
// bf16 weights have no decode for a producer to hide, and there the CTA-synchronised 256-token
// tile (7) is the faster wide one: 0.83-1.02x the time of 8 on the bench's dense GEMMs where the
// family picks 8 in one call, 0.91-0.98x in another (docs/perf.md, "2026-12-02, seventh session").
constexpr int kBf16WideTile = 7;

// How a tile's K ranges meet. The narrow tiles (several CTAs an SM) fold in a thread-block
// cluster, through distributed shared memory: no workspace, no counters, so a single GEMM needs
// no staging launch. The 128- and 256-token tiles (one CTA an SM) fold through the workspace: in
// a cluster they measured slower split than whole (Qwen3-30B dense M = 512: 18.9 us whole, 21.3
// at 2 ranges, 35.9 at 4; through the workspace 16.7 at 2; docs/perf.md, "2026-12-03").
constexpr bool folds_in_cluster(const TileConfig& t) {
  return t.tokens < 128;
}

// What sets a forced-only NVFP4 variant apart from its tile (a decoder warpgroup, a chunk's
// wgmmas in one statement, quad-shared scales) means nothing to bf16 weights:
// they run the tile itself, bf16_twin.
constexpr bool nvfp4_variant(const TileConfig& t) {
  return t.decoded > 0 || t.step_batch || t.quad_scales;
}
// The entry of kTiles that bf16 weights run for `config`: for an NVFP4 variant the same tile
// without it (same tokens, weight rows, chunk and roles), else `config` itself.
constexpr int bf16_twin(int config) {
  const TileConfig& t = kTiles[config];
  for (int i = 0; nvfp4_variant(t) && i < kTileCount; ++i) {
    const TileConfig& c = kTiles[i];
    if (!nvfp4_variant(c) && c.specialized == t.specialized && c.tokens == t.tokens &&
        c.weight_rows == t.weight_rows && c.chunk == t.chunk)
      return i;
  }
  return config;
}

// A kTiles entry as a type: what the kernel templates take (nvcc's launch stubs cannot carry
// class-type template arguments).
template <int kIndex>
struct Tile {
  static constexpr int index = kIndex;
  static constexpr int tokens = kTiles[kIndex].tokens;
  static constexpr int weight_rows = kTiles[kIndex].weight_rows;
  static constexpr int stages = kTiles[kIndex].stages;
  static constexpr bool specialized = kTiles[kIndex].specialized;
  static constexpr int chunk = kTiles[kIndex].chunk;
  static constexpr int decoded = kTiles[kIndex].decoded;
  static constexpr bool step_batch = kTiles[kIndex].step_batch;
  static constexpr bool quad_scales = kTiles[kIndex].quad_scales;
  static constexpr bool cluster_fold = folds_in_cluster(kTiles[kIndex]);
  static_assert(tokens % chunk == 0 && chunk % 8 == 0, "whole chunks of whole swizzle atoms");
  static_assert(decoded == 0 || specialized,
                "a decoder warpgroup joins the warp-specialised roles");
};

// The token width a tile of `rows` group rows runs at: whole chunks (the wgmmas of a k16 step),
// at most the tile's `tokens`. An expert's last row tile is usually partial (routing is
// uneven): its wgmmas skip the chunks past its rows. The weights' loads and decode do not
// depend on the width. row_chunks: the chunks of `chunk` tokens covering `rows` rows.
__host__ __device__ constexpr int row_chunks(int rows, int chunk) {
  return (rows + chunk - 1) / chunk;
}
__host__ __device__ constexpr int tile_width(int rows, const TileConfig& tile) {
  const int width = row_chunks(rows, tile.chunk) * tile.chunk;
  return width < tile.tokens ? width : tile.tokens;
}

// The order in which a projection's tiles run: bands of `band_rows` row tiles, and within a band
// the channel tile slowest. With one row tile a band (the order where the weights fit in L2), a
// row tile's channel tiles run together and share its activations. When a projection's weights
// outgrow L2 that order reads them from HBM again for every row tile; bands of kRasterRows
// (8) let the CTAs running at once share a few row tiles' activations and a few channel tiles'
// weights instead: measured 0.91-0.92x the time on Mixtral's dense GEMM (235 MB of weights), but
// 1.01-1.14x on shapes whose weights fit (docs/perf.md, "2026-12-02, eighth session").
inline constexpr int kRasterRows = 8;
struct TileCoord {
  int channel, row;
};
__host__ __device__ constexpr TileCoord raster_tile(int t, int channel_tiles, int row_tiles,
                                                    int band_rows) {
  const int band_tiles = channel_tiles * band_rows;
  const int first_row = t / band_tiles * band_rows;
  const int rows = row_tiles - first_row < band_rows ? row_tiles - first_row : band_rows;
  const int in_band = t % band_tiles;
  return TileCoord{in_band / rows, first_row + in_band % rows};
}

// Stream-K (a dense bf16 GEMM, stream_k_kernel.cuh): the grid's k-tiles, tile after tile (the
// tile in raster_tile's order, then its K), cut into `ctas` contiguous runs of equal length
// (to one k-tile), one a worker (a CTA, or a cluster of CTAs). A run may start or end inside a
// tile: the workers sharing a tile each sum its K range, and the one holding the tile's last
// k-tile adds the others' sums to its own in a fixed order.
struct StreamKUnits {
  long long units;  // output tiles x k-tiles
  int ctas;         // workers
  // The first unit of worker c's run (c = ctas: the end).
  __host__ __device__ constexpr long long first(int c) const { return c * units / ctas; }
  // The worker whose run holds unit u: the last c with first(c) <= u.
  __host__ __device__ constexpr int owner(long long u) const {
    return static_cast<int>(((u + 1) * ctas + units - 1) / units - 1);
  }
};

struct SingleExpert {
  ExpertEntry entry[2];     // per projection
  std::int32_t offsets[2];  // the expert's group rows [offsets[0], offsets[1])
};

struct GroupedParams {
  const std::uint16_t* a;         // bf16 [a_rows, K]
  const std::int32_t* token_ids;  // [m_total] source row of each group row, or null
  std::int32_t a_rows;            // 0: unchecked (rows are trusted)
  std::int32_t n, k;
  std::int32_t num_experts;
  std::int32_t scale_sfb;           // 1: SFB scales, 0: [K/16, N] scales
  std::int32_t scale_vec16;         // [K/16, N] scales may be read 16 bytes at a time
  const std::int32_t* offsets;      // [num_experts + 1] in device memory, or null: `single`
  std::int32_t m_total;             // rows past it are dropped (device offsets are not validated)
  std::int32_t min_rows, max_rows;  // experts whose rows fall outside belong to another family
  std::uint16_t* out[2];            // bf16 [m_total, N] per projection
  const ExpertEntry* table;         // [proj][num_experts], or null: `single`
  std::int32_t channel_tiles;       // persistent kernels: the tiles of N (the grid's x) ...
  std::int32_t projections;         // ... and of the projections (its z) they walk
  std::int32_t band_rows;           // raster_tile's band: 1, or kRasterRows past L2
  // K ranges per tile (bf16 weights, CTA-synchronised tiles), folded as folds_in_cluster says.
  std::int32_t splits;
  float* partials;          // the workspace fold: [tile][split][accumulator][thread] fp32
  std::uint32_t* counters;  // the workspace fold: [tile] arrivals, zeroed by the staging launch
  // One expert on host offsets (a single GEMM): its entries and offsets travel here, so the
  // launch needs no staged table and no staging launch in front of it.
  SingleExpert single;
  // TiledWeights::bf16_tma: the activations [a rows, K] and the weights [N, K] as TMA tensor
  // maps, boxes of 64 K x the tile's tokens and x its weight rows (tma_maps.hpp).
  CUtensorMap act_map, weight_map;
};

// The work of a grid of tiles: how many, and their summed time in units of a full 128-token
// tile. A tile's time has a part that does not depend on its token width (the weights' loads and
// decode) and one proportional to it, fitted so that a full 256-token tile takes kWideCtaTime
// (NVFP4 weights, measured on full tiles, docs/perf.md, "the 256-token tile"). bf16 weights have
// no decode to share, and their wide tile is another kernel (kBf16WideTile): over the bench's
// dense GEMMs at M = 4096, tile 4 took 0.605-0.63 of tile 7's time a tile (an H100, docs/perf.md,
// twenty-sixth session), so a 256-token tile counts 1.6.
inline constexpr double kWideCtaTime = 1.45;
inline constexpr double kWideCtaTimeBf16 = 1.6;
struct TileLoad {
  long tiles = 0;
  double time = 0;
};
// A tile of `width` tokens on NVFP4 (`nvfp4`) or bf16 weights.
constexpr double tile_time(int width, bool nvfp4) {
  const double wide = nvfp4 ? kWideCtaTime : kWideCtaTimeBf16;
  return (2 - wide) + (wide - 1) * width / 128.0;
}

// Whether the widest tile (256 tokens) beats the 128-token one on the same problem cut both ways,
// on `sm_count` multiprocessors: waves of tiles times a tile's mean time.
bool wide_tile_pays(TileLoad wide, TileLoad narrow, int sm_count);

// How many K-split clusters of `splits` CTAs of tile kTiles[tile] (bf16 weights) the current
// device runs at once (cached per device); 0 when that cannot be asked (no device).
int bf16_split_clusters(int tile, int splits);

// The weights a tiled kernel reads; each has its own instantiations.
enum class TiledWeights {
  bf16,
  bf16_tma,         // a dense bf16 GEMM: both operands copied by TMA (tma_stages.cuh)
  nvfp4,            // the seeds' packed bytes
  nvfp4_prepacked,  // format/prepack.hpp's layout
  nvfp4_fragments,  // prepacked in the fragment order (format/fragment_order.hpp; the default)
};

// The tiles stream-K runs on (stream_k_kernel.cuh): the CTA-synchronised bf16 tiles a dense
// GEMM takes (the 32- and 64-token tiles of small M, the 128- and 256-token ones past it).
inline constexpr int kStreamKTiles[] = {2, 3, 6, 7};
constexpr bool has_stream_k(int tile) {
  for (int t : kStreamKTiles)
    if (t == tile) return true;
  return false;
}
// Launches stream-K on tile kTiles[tile] (has_stream_k) over `workers`: CTAs (cluster 1), or
// clusters of 2 CTAs sharing their weight rows (cluster 2; the weight map's box half the tile's
// weight rows).
cudaError_t launch_stream_k(int tile, int cluster, const GroupedParams& params, int workers,
                            cudaStream_t stream);
// How many stream-K clusters of 2 on tile kTiles[tile] the current device runs at once (cached
// per device); 0 when that cannot be asked (no device).
int stream_k_resident_pairs(int tile);

// Launches tile kTiles[tile] on `weights`; returns the launch's CUDA error.
cudaError_t launch_grouped_gemm(int tile, TiledWeights weights, const GroupedParams& params,
                                dim3 grid, cudaStream_t stream);

}  // namespace metrale::cuda::sm90
