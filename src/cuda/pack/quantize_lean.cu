// The lean quantize pass: the same bits as quantize.cu's quantize_kernel (the earlier, proven
// kernel) in fewer instructions a tile (a full tile's common path, cuobjdump sm_90a: 544 a
// thread, the proven kernel's 788). The default: on an H100 it took 0.79-0.85x the proven
// kernel's time, 73.0 M warp instructions to 104.2 M (docs/perf.md, twenty-second session);
// METRALE_CUDA_QUANTIZER=proven keeps that one for A/B runs. The same tile, walk, scale stores
// and NaN refusal as the proven kernel
// (quantize_tile.cuh); what differs, each where the proven kernel spent its instructions:
//   - codes by a two-lane binary search (search_codes.hpp), 16 instructions a word and 3 a row
//     to gather its bytes, where the thermometer code took ~24 a word;
//   - block scales from a per-CTA table indexed by the block amax's bf16 bits (scale_table.hpp),
//     where each scale took an IEEE division and its range checks; an amax outside the table
//     takes the division (a rare path);
//   - the next tile staged in shared memory by cp.async, not held in 16 registers: no spill at
//     the 64-register bound of 4 CTAs an SM. Each thread reads back only the chunks it copied
//     (cp.async.wait_group makes them visible to it), so staging needs no barrier. Rows past N
//     and columns past K are zero-filled, not read: their codes and scales are computed and not
//     stored, and zeros hold no NaN;
//   - the four rows' half maxima paired in two words (one shuffle to exchange them), one NaN test
//     a tile, a lane's two scale bytes stored as one 2-byte word;
//   - the rare paths (a NaN's index, scales outside the table, a scale byte whose d is 0 or Inf)
//     behind one test each (the dividing codes behind one CTA-uniform test a tile), inline: as
//     calls (__noinline__) they cost the common path ~55 more instructions a tile, ptxas
//     re-deriving the thread's place and the shared-memory base after each call site.
// sm_80+ (cp.async).
#include <cuda_runtime.h>

#include <cstdint>
#include <limits>

#include "core/error.hpp"
#include "cuda/cuda_check.hpp"
#include "cuda/pack/lean_tile.hpp"
#include "cuda/pack/pack_launch.hpp"
#include "cuda/pack/quantize_block.hpp"
#include "cuda/pack/quantize_tile.cuh"
#include "cuda/pack/scale_table.hpp"
#include "cuda/pack/search_codes.hpp"
#include "cuda/per_device.hpp"
#include "cuda/sm90/primitives.cuh"  // cp.async

namespace metrale::cuda {
namespace {

constexpr int kChunksPerRow = kTileCols / 8;  // a lane's 16 bytes of a row
constexpr int kStageChunks = kTileRows * kChunksPerRow;
constexpr std::uint32_t kStageRowBytes = kChunksPerRow * sizeof(uint4);
// Tiles counted in 32 bits: a tensor that fits a GPU's memory has fewer than 2^27 of them (N·K ≤
// 2^36 bf16: at most N·K/8192 + N/32 + K/256 + 1), and the launch refuses more than 2^31 - 1.
using TileCursor32 = BasicTileCursor<int>;

// The threshold table by scale byte (pack::CodeConstants) in two halves of 16 bytes: a warp's
// loads of an entry, 16 bytes a lane at random scale bytes, then spread over eight bank groups
// (sf % 8) where 32-byte entries gave four.
struct CodeHalves {
  uint4 low[pack::kScaleBytes];   // add[0..3]
  uint4 high[pack::kScaleBytes];  // add[4..6], divide
};

struct LeanShared {
  uint4 stage[2][kTileRows][kChunksPerRow];      // the tile worked on and the next: 32 KB
  CodeHalves codes;                              // thresholds by scale byte: 4 KB
  std::uint8_t scales[pack::kScaleTableBytes];   // scale byte by block amax: 2432 bytes
  alignas(4) std::uint8_t tile_scales[2][kTileBlocks][kTileRows];  // as the proven kernel's
};

__device__ __forceinline__ pack::CodeConstants code_constants_of(const CodeHalves& codes,
                                                                 std::uint32_t sf) {
  const uint4 low = codes.low[sf], high = codes.high[sf];
  return {{low.x, low.y, low.z, low.w, high.x, high.y, high.z}, high.w};
}

// Builds both tables; true when some block's scale byte can have a d of 0 or Inf (CTA-uniform),
// so that the loop tests a row's `divide` only then (byte 0's d is always 0, and no block has it:
// pack::divides_a_block).
__device__ __forceinline__ bool build_tables(LeanShared& s, float scale_2, std::uint32_t base) {
  bool divide = false;
  for (int i = threadIdx.x; i < pack::kScaleBytes; i += kQuantThreads) {
    const pack::CodeConstants c = pack::code_constants(static_cast<std::uint8_t>(i), scale_2);
    s.codes.low[i] = make_uint4(c.add[0], c.add[1], c.add[2], c.add[3]);
    s.codes.high[i] = make_uint4(c.add[4], c.add[5], c.add[6], c.divide);
    divide = divide || pack::divides_a_block(i, c);
  }
  for (std::uint32_t i = threadIdx.x; i < pack::kScaleTableBytes; i += kQuantThreads)
    s.scales[i] = pack::scale_table_entry(base, i, scale_2);
  return __syncthreads_or(divide) != 0;
}

// The thread's four chunks of the tile at `rows` into `stage` (zeros for rows outside the
// tensor, whose source is then the weight's first chunk: never read, but mapped).
__device__ __forceinline__ void stage_tile(const QuantizeParams& p, pack::LeanRows rows,
                                           std::uint32_t row_bytes, std::uint32_t stage) {
  const auto* src = reinterpret_cast<const char*>(p.weight + rows.first);
#pragma unroll
  for (int j = 0; j < kRowsPerWarp; ++j) {
    const bool inside = j < rows.rows;
    sm90::cp_async_16_if(stage + j * kStageRowBytes,
                         inside ? src + j * static_cast<std::size_t>(row_bytes)
                                : reinterpret_cast<const char*>(p.weight),
                         inside);
  }
}

__device__ __forceinline__ pack::LeanRows staged_rows(const QuantizeParams& p, TileOrigin t,
                                                      int warp, int lane) {
  return pack::lean_rows(p.n, p.k, t.row0, t.col0, warp, lane);
}

// ---- the rare paths ---------------------------------------------------------------------------

// The thread's lowest flat index of a NaN or ±Inf in the tile (its chunks in shared memory).
__device__ __forceinline__ unsigned long long first_non_finite_in_tile(const uint4* chunks,
                                                                       TileOrigin t, int warp,
                                                                       int lane, std::int64_t k) {
  for (int j = 0; j < kRowsPerWarp; ++j) {
    std::uint32_t words[4];
    load_words(chunks[j * kChunksPerRow], words);
    const int e = pack::first_non_finite(words);
    if (e >= 0) return (t.row0 + kRowsPerWarp * warp + j) * k + t.col0 + 8 * lane + e;
  }
  return kNoIndex;
}

// Both block scales of a lane's rows (their maxima in the low and high lanes) by the division.
__device__ __forceinline__ std::uint32_t scales_dividing(std::uint32_t block_max, float scale_2) {
  return pack::block_scale_byte(block_max & 0xFFFFu, scale_2) |
         pack::block_scale_byte(block_max >> 16, scale_2) << 8;
}

// A row's four code bytes through the recipe's division (a scale byte whose d is 0 or Inf).
__device__ __forceinline__ std::uint32_t codes_dividing(const uint4* chunk, std::uint32_t sf,
                                                        float scale_2) {
  std::uint32_t words[4];
  load_words(*chunk, words);
  return pack::pack_four_words(words, pack::CodeConstants{{}, 1u}, static_cast<std::uint8_t>(sf),
                               scale_2);
}

// ---- the kernel --------------------------------------------------------------------------------

// What a thread's rows of codes need: its stage chunks, its and its partner's scale pairs, where
// its codes go (a row's four bytes, the next `row_stride` bytes on) and how many rows are inside.
struct RowCodes {
  const uint4* chunks;
  int my_rows;
  std::uint32_t mine, theirs;
  float scale_2;
  std::uint8_t* codes;
  std::uint32_t row_stride;
  int rows;
};

// A thread's four rows of codes, stored; kDivide: some scale byte's d is 0 or Inf (CTA-uniform),
// so a row may need the division (the test is then a row's; without, none).
template <bool kDivide>
__device__ __forceinline__ void code_rows(const CodeHalves& table,
                                          const std::uint32_t (&words)[kRowsPerWarp][4],
                                          const RowCodes& job) {
#pragma unroll
  for (int j = 0; j < kRowsPerWarp; ++j) {
    const std::uint32_t sf = pack::row_scale(j, job.my_rows, job.mine, job.theirs);
    const pack::CodeConstants c = code_constants_of(table, sf);
    const std::uint32_t packed =
        kDivide && c.divide ? codes_dividing(job.chunks + j * kChunksPerRow, sf, job.scale_2)
                            : pack::search_codes_of_row(words[j], c);
    if (j < job.rows)
      __stcs(
          reinterpret_cast<unsigned int*>(job.codes + j * static_cast<std::size_t>(job.row_stride)),
          packed);
  }
}

// The block scales of a lane's two rows from the table; both by the division (one test for the
// two) when either amax lies outside it.
__device__ __forceinline__ std::uint32_t pair_scales(const LeanShared& s, std::uint32_t base,
                                                     std::uint32_t block_max, float scale_2) {
  const std::uint32_t at_low = pack::scale_table_index(block_max & 0xFFFFu, base);
  const std::uint32_t at_high = pack::scale_table_index(block_max >> 16, base);
  if (max(at_low, at_high) >= pack::kScaleTableBytes) return scales_dividing(block_max, scale_2);
  return s.scales[at_low] | static_cast<std::uint32_t>(s.scales[at_high]) << 8;
}

__global__ void __launch_bounds__(kQuantThreads, 4) quantize_lean_kernel(QuantizeParams p) {
  __shared__ LeanShared s;
  // After a scan that found a NaN or ±Inf, write nothing: the host refuses the weight.
  if (p.scale_2_out && p.scratch->first_bad_complement != 0) return;
  const bool computed = p.scale_2_out != nullptr;
  const std::uint32_t tensor_amax = computed ? p.scratch->amax_magnitude : 0u;
  const float scale_2 = computed ? format::scale_2_from_amax(format::bf16_to_float(
                                       static_cast<std::uint16_t>(tensor_amax)))
                                 : 1.0f;
  const std::uint32_t base = pack::scale_table_base(pack::scale_table_top(computed, tensor_amax));
  const bool any_divide = build_tables(s, scale_2, base);
  if (computed && blockIdx.x == 0 && threadIdx.x == 0) *p.scale_2_out = scale_2;

  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const int my_rows = pack::scaled_rows(lane);  // the first of the two rows it scales
  const auto tiles = static_cast<int>(p.row_tiles * p.col_tiles);  // quantize_lean checks it fits
  unsigned long long first_bad = kNoIndex;
  const auto row_bytes = static_cast<std::uint32_t>(p.k * sizeof(bf16_bits));
  // This thread's first chunk in stage buffer 0 (its rows follow a row of chunks apart; buffer 1
  // a stage further).
  const uint4* const my_chunks = &s.stage[0][kRowsPerWarp * warp][lane];
  TileCursor32 at(p, blockIdx.x);  // the tile being worked on; `ahead`, the one being staged
  pack::LeanRows staged =
      staged_rows(p, at.origin(), warp, lane);  // kept: its codes are stored from it
  if (blockIdx.x < tiles) stage_tile(p, staged, row_bytes, sm90::smem_address(my_chunks));
  sm90::cp_async_commit();
  TileCursor32 ahead = at;
  int buffer = 0;
  for (int step = blockIdx.x; step < tiles; step += gridDim.x, buffer ^= 1) {
    const pack::LeanRows rows = staged;
    ahead.advance(p);
    if (step + static_cast<int>(gridDim.x) < tiles) {
      staged = staged_rows(p, ahead.origin(), warp, lane);
      stage_tile(p, staged, row_bytes, sm90::smem_address(my_chunks + (buffer ^ 1) * kStageChunks));
    }
    sm90::cp_async_commit();  // empty after the last tile: the wait below still counts it
    sm90::cp_async_wait<1>();
    const TileOrigin t = at.origin();
    at = ahead;
    const uint4* chunks = my_chunks + buffer * kStageChunks;
    std::uint32_t words[kRowsPerWarp][4];
#pragma unroll
    for (int j = 0; j < kRowsPerWarp; ++j) load_words(chunks[j * kChunksPerRow], words[j]);
    const std::uint32_t rows01 = pack::paired_half_maxima(words[0], words[1]);
    const std::uint32_t rows23 = pack::paired_half_maxima(words[2], words[3]);
    if (pack::any_non_finite(pack::max_lanes(rows01, rows23)))
      first_bad = min(first_bad, first_non_finite_in_tile(chunks, t, warp, lane, p.k));
    // The partner lane holds the blocks' other halves: one shuffle gives each lane its rows'.
    const std::uint32_t partner_half =
        __shfl_xor_sync(0xFFFFFFFFu, pack::halves_for_partner(my_rows, rows01, rows23), 1);
    const std::uint32_t block_max =
        pack::max_lanes(pack::halves_kept(my_rows, rows01, rows23), partner_half);
    const std::uint32_t mine = pair_scales(s, base, block_max, scale_2);
    const std::uint32_t theirs = __shfl_xor_sync(0xFFFFFFFFu, mine, 1);
    *reinterpret_cast<std::uint16_t*>(
        &s.tile_scales[buffer][lane / 2][kRowsPerWarp * warp + my_rows]) =
        static_cast<std::uint16_t>(mine);
    std::uint8_t* codes = p.packed + static_cast<std::uint64_t>(rows.first) / 2;
    const RowCodes job{chunks, my_rows, mine, theirs, scale_2, codes, row_bytes / 4, rows.rows};
    if (any_divide)
      code_rows<true>(s.codes, words, job);
    else
      code_rows<false>(s.codes, words, job);
    // One barrier a tile, as the proven kernel's: it also orders the scale buffer's reuse.
    __syncthreads();
    store_tile_scales(p, t, s.tile_scales[buffer]);
  }
  sm90::cp_async_wait<0>();
  publish_first_bad(first_bad, p.scratch);
}

}  // namespace

void quantize_lean(const QuantizeParams& p, cudaStream_t stream) {
  const std::int64_t tiles = p.row_tiles * p.col_tiles;
  const unsigned grid = pack::grid_size(static_cast<std::size_t>(tiles), 1,
                                        resident_ctas(quantize_lean_kernel, kQuantThreads));
  // The walk's last step passes `tiles` by up to a grid: that too must count in 32 bits.
  if (tiles > std::numeric_limits<int>::max() - static_cast<std::int64_t>(grid))
    fail_message(Status::internal, concat("quantize_lean: ", p.n, " x ", p.k, " is ", tiles,
                                          " tiles, more than its 32-bit walk counts"));
  quantize_lean_kernel<<<grid, kQuantThreads, 0, stream>>>(p);
  METRALE_CUDA_CHECK_LAUNCH(quantize_lean_kernel);
}

}  // namespace metrale::cuda
