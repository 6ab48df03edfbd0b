// The decode family's main kernel, steps 1 and 2 (decode_kernel.cuh has the data path): the
// stage layout (Shape), where a CTA finds its units (the work lists, locate_unit), and the
// cp.async loader that runs kStages - 1 stages ahead of the consumer (StageLoader, LoadCursor).
#pragma once

#include <cuda_bf16.h>

#include <cstdint>

#include "cuda/sm90/decode/decode_params.hpp"
#include "cuda/sm90/primitives.cuh"
#include "cuda/sm90/wgmma_ops.cuh"
#include "format/layouts.hpp"

namespace metrale::cuda::sm90::decode {

// Every copy of the loader, its 16-byte ones asking L2 for the 256 bytes around their source
// (cp_async_zfill's kL2Prefetch256): a stage reads 32 bytes of each weight row a sub-tile, so the
// row's next stages then come from L2 and DRAM serves 256-byte requests where it served sectors
// scattered over 64 rows. H100, same call (docs/perf.md, thirty-first session): 0.87-0.99x the
// time on DeepSeek-V3, Mixtral and gpt-oss at T = 1-64, Qwen3's gate_up 0.96-0.97x, Qwen3's downs
// at T = 8 (K of 512 and 768: a CTA's range is short) 1.02-1.03x. The stream family's copies
// measured slower with it (1.01-1.08x: a warp has its whole range in flight at once) and the
// tiled family's undecided: both keep the plain copy.
template <int kBytes>
__device__ __forceinline__ void copy_to_stage(uint32_t dst, const void* src, bool valid) {
  cp_async_zfill<kBytes, true>(dst, src, valid);
}

// One wgmma M half's codes in a sub-tile (kRows rows x 64 codes); a sub-tile's second half, where
// a unit has two, follows its first.
inline constexpr int kHalfWeightBytes = kRows * kKTile / 2;

inline constexpr int kDecodeThreads = 128;  // one warpgroup a CTA

// A configuration's kernel shape: kTokens wide, kUnitRows weight rows a unit (decode_params.hpp).
template <int kTokens, int kUnitRows>
struct Shape {
  static constexpr int kThreads = kDecodeThreads;
  static constexpr int kHalves = kUnitRows / kRows;  // wgmma M halves of kRows a unit
  // A stage is kSubTiles k-tiles of 64: the barrier, the waits and the loader's bookkeeping are
  // paid once per stage, so narrow tiles (where they dominate) take 4 decode steps of 64 rows x
  // 64 K a stage (4 k-tiles of one half, or 2 of two).
  static constexpr int kSubTiles = kTokens <= 16 ? 4 / kHalves : 2;
  static constexpr int kSteps = kSubTiles * kHalves;  // decode steps (64 rows x 64 K) a stage
  // Up to 32 tokens: at most 128 registers and ~55 KB of stages, so that 4 CTAs (16 warps) share
  // an SM and keep its issue slots busy; each still has 2 stages in flight (128-row tiles at 32
  // tokens: 3 CTAs, decode_params.hpp's ctas_an_sm). 32 tokens at 4 sub-tiles a stage took 81 KB
  // and 192 registers, 2 CTAs an SM: Mixtral gate_up at T = 64 ran 345 us that way and
  // 320-325 us this way (docs/perf.md, 2026-12-02, second session).
  static constexpr int kStages = kTokens <= 16 ? 3 : kTokens <= 64 ? 4 : 3;
  static constexpr int kMinCtasPerSm = ctas_an_sm(kTokens, kUnitRows);
  static constexpr int kActBytes = kTokens * kSwizzleRowBytes;      // kTokens x 64 bf16
  static constexpr int kWeightBytes = kHalves * kHalfWeightBytes;
  static constexpr int kScaleBytes = static_cast<int>(format::kSfbTileBytes);
  static constexpr int kWeightsAt = kSubTiles * kActBytes;         // sub-tile j at + j x bytes
  static constexpr int kScalesAt = kWeightsAt + kSubTiles * kWeightBytes;
  static constexpr int kStageBytes =
      (kScalesAt + kSubTiles * kScaleBytes + kSwizzleAtomBytes - 1) / kSwizzleAtomBytes *
      kSwizzleAtomBytes;
  static constexpr int kAcc = kTokens / 2;               // fp32 accumulators per thread
  static constexpr int kFoldAcc = kAcc < 32 ? kAcc : 32;  // those of the first kFoldMaxRows tokens
  // Every thread copies the same pieces of a sub-tile: activations in pieces of 16 bytes (8 for
  // 8-token tiles, so that all 128 threads have one) and 16 bytes of codes a half; rows past the
  // tile's are zero fill, not a skipped copy. So no copy waits behind a per-thread branch, and
  // ptxas issues a stage's copies back to back (116 -> 38 instructions a stage at 8 tokens).
  static constexpr int kActPieceBytes = kTokens >= 16 ? 16 : 8;
  static constexpr int kActPiecesPerRow = kSwizzleRowBytes / kActPieceBytes;
  static constexpr int kActPieceRows = kThreads / kActPiecesPerRow;  // between a thread's pieces
  static constexpr int kActPerThread = kActBytes / kActPieceBytes / kThreads;
  // The whole 512-byte SFB tile: 4 bytes a thread, or from 32 tokens 16 bytes by the first warp
  // (a warp-uniform branch), where 128 threads' scale addresses pushed the kernel past its 128
  // registers (12 -> 40 bytes of spills) and cost 9 % (Mixtral T = 64, docs/perf.md).
  static constexpr int kScaleCopiers = kTokens >= 32 ? 32 : kThreads;
  static constexpr int kScalePieceBytes = kScaleBytes / kScaleCopiers;
  // The unit table (the unit prefix in shared memory) follows the stages; kPipelineBytes adds
  // the slack that aligns the first stage.
  static constexpr int kUnitTableAt = kStages * kStageBytes;
  static constexpr int kPipelineBytes = kUnitTableAt + kSwizzleAtomBytes;

  static_assert(kTokens % 8 == 0 && kTokens <= 256, "kTokens: a wgmma N in 8..256");
  static_assert(kSteps % 2 == 0, "A-fragment buffers alternate: a stage starts on buffer 0");
  static_assert(16 % kSubTiles == 0, "split chunks (multiples of 16 k-tiles) hold whole stages");
  static_assert(kActBytes % kSwizzleAtomBytes == 0, "every sub-tile must stay 1024-aligned");
  static_assert(kActPerThread * kActPieceBytes * kThreads == kActBytes &&
                    kWeightBytes == 16 * kThreads * kHalves &&
                    kScalePieceBytes * kScaleCopiers == kScaleBytes && 4 * kUnitRows <= kScaleBytes,
                "each thread copies whole pieces, as many as every other thread");
  static_assert(kFoldMaxRows <= 2 * kFoldAcc || kTokens < kFoldMaxRows,
                "the running total must hold the columns of every folded expert");
  static_assert(kPipelineBytes + (kMaxExperts + 1) * 4 <= 227 * 1024,
                "stages and the unit table must fit sm_90's 227 KB");
};

// Where the main kernel finds its work (a work list: `count` segments, `units` units, the unit
// prefix, segment(i), entry(proj, expert)):
// the plan kernel's list in the workspace, readable after griddepcontrol.wait;
struct DeviceWork {
  const DecodeParams& p;
  const std::int32_t* unit_first;  // [count + 1], cached in shared memory
  int count, units;
  __device__ __forceinline__ const Segment& segment(int i) const { return p.segments[i]; }
  __device__ __forceinline__ const ExpertEntry& entry(int proj, int expert) const {
    return p.table[proj * p.num_experts + expert];
  }
};

// or the host's (HostWork) in the launch's parameters, readable at once. (Both read the
// parameters and tables in place: a struct of their pointers took registers, and the 32-token
// kernel two more spill loads a stage.)
struct HostPlannedWork {
  const HostWork& w;
  const std::int32_t* unit_first;  // copied into shared memory
  int count, units;
  __device__ __forceinline__ const Segment& segment(int i) const { return w.segment[i]; }
  __device__ __forceinline__ const ExpertEntry& entry(int proj, int expert) const {
    return w.entries[proj][expert];
  }
};

// What a loader pass copies: a host-planned launch copies the first stages' weights and scales
// before griddepcontrol.wait and their activations (written by the staging kernel) after it.
enum class Parts { all, weights, activations };

// 16-byte aligned as measured (the host-planned kernel copies the cursor, this unit with it, to
// replay its first stages, and the alignment changes that kernel's register allocation).
struct alignas(16) Unit {
  std::int32_t expert, proj, n0, row_begin, rows;
  std::int32_t tile;            // counter of a split tile
  std::int32_t first_chunk;     // its k-tiles start at first_chunk x chunk_tiles (kt_begin())
  std::int32_t kt_end, chunk_tiles, chunks, splits, fold_blocks;
  std::int64_t partial;         // float offset of the tile's partial slots

  __device__ __forceinline__ int kt_begin() const { return first_chunk * chunk_tiles; }
};

// Step 1: unit u of the work list, once a unit, which a short K makes a few stages (Qwen3-30B's
// down at T = 64: three). Its segment by binary search over the unit prefix (find_segment), then
// the unit within it (unit_in_segment).
template <class Work>
__device__ __forceinline__ int find_segment(const Work& work, int u) {
  int lo = 0, hi = work.count - 1;
  while (lo < hi) {
    const int mid = (lo + hi + 1) / 2;
    if (work.unit_first[mid] <= u) lo = mid; else hi = mid - 1;
  }
  return lo;
}

// Unit u, which lies in segment `lo`. Its divisions are by the launch's tile count (FastDiv) and
// the projection count (1 or 2, as the API validates: a shift), and by the split only in a split
// segment: with seven divisions by variables it was a sixth of the kernel's instructions at
// Qwen3-30B down T = 64 (docs/perf.md, "2026-12-04, twelfth session").
template <int kTokens, int kUnitRows, class Work>
__device__ __forceinline__ Unit unit_in_segment(const DecodeParams& p, const Work& work, int u,
                                                int lo) {
  const Segment seg = work.segment(lo);
  const auto local = static_cast<std::uint32_t>(u - work.unit_first[lo]);
  std::uint32_t tile = local;
  int first_chunk = 0, end_chunk = seg.chunks;
  if (seg.splits > 1) {  // a few tiles, many chunks each: their own divisions are no cost
    const int range = static_cast<int>(local % seg.splits);
    tile = local / seg.splits;
    first_chunk = range * seg.chunks / seg.splits;
    end_chunk = (range + 1) * seg.chunks / seg.splits;
  }
  const std::uint32_t rest = p.n_tiles.quotient(tile);
  const int n_tile = static_cast<int>(p.n_tiles.remainder(tile, rest));
  const int projection_bits = p.proj_count - 1;
  const int token_tile = static_cast<int>(rest >> projection_bits);
  Unit unit;
  unit.expert = seg.expert;
  unit.proj = static_cast<int>(rest) & projection_bits;
  unit.n0 = n_tile * kUnitRows;
  unit.row_begin = seg.row_begin + token_tile * kTokens;
  unit.rows = min(kTokens, seg.rows - token_tile * kTokens);
  unit.tile = seg.first_tile + static_cast<int>(tile);
  unit.chunk_tiles = seg.chunk_tiles;
  unit.chunks = seg.chunks;
  unit.splits = seg.splits;
  unit.fold_blocks = seg.fold_blocks;
  unit.first_chunk = first_chunk;
  const int k_tiles = (p.k + kKTile - 1) / kKTile;
  // Whole stages: the k-tiles past K in the last one are loaded as zeros.
  constexpr int kSub = Shape<kTokens, kUnitRows>::kSubTiles;
  unit.kt_end = (min(end_chunk * seg.chunk_tiles, k_tiles) + kSub - 1) / kSub * kSub;
  unit.partial = seg.first_partial +
                 static_cast<std::int64_t>(tile) * seg.chunks * seg.fold_blocks * 8 * kUnitRows;
  return unit;
}

template <int kTokens, int kUnitRows, class Work>
__device__ __forceinline__ Unit locate_unit(const DecodeParams& p, const Work& work, int u) {
  return unit_in_segment<kTokens, kUnitRows>(p, work, u, find_segment(work, u));
}

// Step 2: this thread's cp.async share of a stage. Activation piece i of the thread is row
// tid / kActPiecesPerRow + kActPieceRows i, piece tid % kActPiecesPerRow of it, so one base
// pointer and a count of real rows describe them all; every address is set up once per unit and
// a stage adds k-tile offsets only. A stage wholly inside K with SFB scales (all but a unit's last
// when K is not a multiple of the stage) copies with no predicate and no branch.
template <int kTokens, int kUnitRows>
struct StageLoader {
  using S = Shape<kTokens, kUnitRows>;
  const std::uint8_t* act = nullptr;     // piece 0 at k-tile 0 (the table's base when no row)
  std::int32_t act_pieces = 0;           // pieces 0 .. act_pieces - 1 are real rows
  // This thread's 16 bytes at k-tile 0 in each half (the table's base where the row is >= N).
  const std::uint8_t* weight[S::kHalves] = {};
  bool weight_real[S::kHalves] = {};     // its weight row in the half is < N
  const std::uint8_t* scale = nullptr;   // this thread's scale piece at k-tile 0, or null
  std::int32_t scale_stride = 0;         // bytes per k-tile
  std::int32_t scale_dst = 0;            // its place in a sub-tile's scale slot
  std::int32_t n0 = 0;
  const std::uint8_t* expert_scales = nullptr;

  template <class Work>
  __device__ void start(const DecodeParams& p, const Work& work, const Unit& u) {
    const int tid = threadIdx.x;
    const int first_row = tid / S::kActPiecesPerRow, column = tid % S::kActPiecesPerRow;
    act_pieces = first_row < u.rows ? (u.rows - first_row + S::kActPieceRows - 1) / S::kActPieceRows : 0;
    act = act_pieces > 0 ? reinterpret_cast<const std::uint8_t*>(p.act) +
                               (static_cast<std::size_t>(u.row_begin) + first_row) * act_stride(p.k) * 2 +
                               column * S::kActPieceBytes
                         : reinterpret_cast<const std::uint8_t*>(p.act);
    const ExpertEntry entry = work.entry(u.proj, u.expert);
    const int w = tid / 2, c = tid % 2;
#pragma unroll
    for (int h = 0; h < S::kHalves; ++h) {
      const int row = u.n0 + h * kRows + w;
      weight_real[h] = row < p.n;
      weight[h] = weight_real[h] ? static_cast<const std::uint8_t*>(entry.weight) +
                                       static_cast<std::size_t>(row) * (p.k / 2) + c * 16
                                 : reinterpret_cast<const std::uint8_t*>(p.act);
    }
    n0 = u.n0;
    expert_scales = entry.scale;
    scale = nullptr;
    if (p.scale_sfb) {
      // The whole 128-row SFB tile (Shape::kScaleCopiers threads). A 64-row unit uses half of it,
      // 8 of every 16 bytes, so the other half costs no 32-byte sector more, and the copy no
      // branch.
      scale = entry.scale + format::sfb_tile_offset(u.n0, 0, p.k) + tid * S::kScalePieceBytes;
      scale_stride = format::kSfbTileBytes;
      scale_dst = tid * S::kScalePieceBytes;
    } else if (p.scale_vec16) {
      // 4 block rows x kUnitRows / 16 pieces of 16 scales
      constexpr int kPieces = kUnitRows / 16;
      const int i = tid / kPieces, c16 = tid % kPieces;
      if (tid < 4 * kPieces && u.n0 + c16 * 16 < p.n) {
        scale = entry.scale + static_cast<std::size_t>(i) * p.n + u.n0 + c16 * 16;
        scale_stride = 4 * p.n;
        scale_dst = i * kUnitRows + c16 * 16;
      }
    }
  }

  // Piece i's place in a sub-tile's activations (the 128-byte swizzle; a thread's pieces lie whole
  // 8-row groups apart, so they share its chunk position).
  static __device__ __forceinline__ uint32_t act_dst(int i) {
    const int column = threadIdx.x % S::kActPiecesPerRow;
    return swizzled_offset(threadIdx.x / S::kActPiecesPerRow, column * S::kActPieceBytes / 16) +
           column * S::kActPieceBytes % 16 + i * S::kActPieceRows * kSwizzleRowBytes;
  }

  // This thread's 16 bytes of codes in a sub-tile's first half: row tid / 2, 16-byte piece
  // tid % 2, the pieces swapped every 4 rows (decode_offsets reads them so); the second half's
  // at + kHalfWeightBytes.
  static __device__ __forceinline__ uint32_t weight_dst() {
    const int w = threadIdx.x / 2, c = threadIdx.x % 2;
    return w * 32 + ((c ^ ((w >> 2) & 1)) * 16);
  }

  // This thread's piece of an SFB tile (the first kScaleCopiers threads copy it).
  static __device__ __forceinline__ void copy_scale_piece(uint32_t dst, const std::uint8_t* src) {
    if (S::kScaleCopiers == S::kThreads || threadIdx.x < S::kScaleCopiers)
      copy_to_stage<S::kScalePieceBytes>(dst, src, true);
  }

  __device__ __forceinline__ const std::uint8_t* act_piece(const DecodeParams& p, int i) const {
    return act + static_cast<std::size_t>(i) * S::kActPieceRows * act_stride(p.k) * 2;
  }

  // The stage of k-tiles [kt0, kt0 + kSubTiles), or the `kParts` of it.
  template <Parts kParts>
  __device__ __forceinline__ void load(const DecodeParams& p, int kt0, uint32_t stage,
                                       std::uint8_t* stage_ptr) const {
    constexpr bool kActs = kParts != Parts::weights, kWeights = kParts != Parts::activations;
    if ((kt0 + S::kSubTiles) * kKTile <= p.k && p.scale_sfb) {
      const std::uint8_t* sc = scale + static_cast<std::size_t>(kt0) * format::kSfbTileBytes;
      const uint32_t weights_at = stage + S::kWeightsAt + weight_dst();
#pragma unroll
      for (int j = 0; j < S::kSubTiles; ++j) {
        if constexpr (kActs) {
#pragma unroll
          for (int i = 0; i < S::kActPerThread; ++i)
            copy_to_stage<S::kActPieceBytes>(
                stage + act_dst(i) + j * S::kActBytes,
                (i < act_pieces ? act_piece(p, i) : act) + (kt0 + j) * (kKTile * 2),
                i < act_pieces);
        }
        if constexpr (kWeights) {
#pragma unroll
          for (int h = 0; h < S::kHalves; ++h)
            copy_to_stage<16>(weights_at + j * S::kWeightBytes + h * kHalfWeightBytes,
                              weight[h] + (kt0 + j) * (kKTile / 2), weight_real[h]);
          copy_scale_piece(stage + S::kScalesAt + j * S::kScaleBytes + scale_dst,
                           sc + j * format::kSfbTileBytes);
        }
      }
      return;
    }
#pragma unroll
    for (int j = 0; j < S::kSubTiles; ++j) {
      if constexpr (kActs) load_sub_tile_activations(p, kt0 + j, stage + j * S::kActBytes);
      if constexpr (kWeights)
        load_sub_tile_weights(p, kt0 + j, stage + S::kWeightsAt + j * S::kWeightBytes,
                              stage + S::kScalesAt + j * S::kScaleBytes,
                              stage_ptr + S::kScalesAt + j * S::kScaleBytes);
    }
  }

  // The general path: K predicates, any scale layout.
  __device__ void load_sub_tile_activations(const DecodeParams& p, int kt,
                                            uint32_t act_base) const {
    const bool act_in_k = kt * kKTile < p.k;  // a k-tile of the padded rows (zeros past K)
#pragma unroll
    for (int i = 0; i < S::kActPerThread; ++i) {
      // A zero-filled piece still names a valid address (the table's first row).
      const bool real = i < act_pieces && act_in_k;
      const void* src = real ? act_piece(p, i) + kt * kKTile * 2 : static_cast<const void*>(p.act);
      copy_to_stage<S::kActPieceBytes>(act_base + act_dst(i), src, real);
    }
  }

  __device__ void load_sub_tile_weights(const DecodeParams& p, int kt, uint32_t weight_base,
                                        uint32_t scale_dst_base, std::uint8_t* scale_ptr) const {
    const int tid = threadIdx.x;
    const bool in_k = kt * (kKTile / 2) + (tid % 2) * 16 < p.k / 2;
    // A zero-filled copy (weights or [K/16, N] scales) names the activation table, a valid
    // address: the thread's own source can lie past the buffer at K = 32 (the last row's second
    // 16 bytes of codes; scale block rows 2 and 3, which do not exist).
#pragma unroll
    for (int h = 0; h < S::kHalves; ++h) {
      const bool real = weight_real[h] && in_k;
      copy_to_stage<16>(weight_base + weight_dst() + h * kHalfWeightBytes,
                        real ? static_cast<const void*>(weight[h] + kt * (kKTile / 2)) : p.act,
                        real);
    }
    if (kt * kKTile >= p.k) {
      // Past K: zero scales, so the (zero-filled) codes decode to zeros, never NaN.
      if (tid < S::kScaleBytes / 16) copy_to_stage<16>(scale_dst_base + tid * 16, p.act, false);
      return;
    }
    if (p.scale_sfb) {
      copy_scale_piece(scale_dst_base + scale_dst,
                       scale + static_cast<std::size_t>(kt) * scale_stride);
    } else if (p.scale_vec16) {
      if (scale) {
        const bool real = kt * 4 + scale_dst / kUnitRows < p.k / 16;
        copy_to_stage<16>(
            scale_dst_base + scale_dst,
            real ? static_cast<const void*>(scale + static_cast<std::size_t>(kt) * scale_stride)
                 : p.act,
            real);
      }
    } else {
      // [K/16, N] with rows that are not 16-byte aligned: plain loads, visible after the barrier
      // that precedes this stage's use.
      for (int idx = tid; idx < 4 * kUnitRows; idx += S::kThreads) {
        const int i = idx / kUnitRows, r = idx % kUnitRows, b = kt * 4 + i;
        const bool real = b < p.k / 16 && n0 + r < p.n;
        scale_ptr[idx] = real ? __ldg(expert_scales + static_cast<std::size_t>(b) * p.n + n0 + r) : 0;
      }
    }
  }
};

// The loader's cursor: kStages - 1 stages ahead of the consumer's, over the same units.
//
// Each unit's segment, found by the loader's binary search, is left in `segments` (the entry of
// the stage slot the unit's first stage fills, written by thread 0), where the consumer finds it
// when it reaches the unit, one stage barrier later at least: the consumer skips the search. The
// loader writes that entry again only when a later unit starts in the same slot, after the
// consumer has taken the stage there. (The whole unit through shared memory saved more
// instructions and measured slower on long K: ptxas scheduled the stage loop worse.)
template <int kTokens, int kUnitRows>
struct LoadCursor {
  using S = Shape<kTokens, kUnitRows>;
  int u = 0, kt = 0, slot = 0;
  bool loading = true;
  Unit unit;
  StageLoader<kTokens, kUnitRows> loader;
  int* segments = nullptr;  // [kStages], shared memory

  template <class Work>
  __device__ __forceinline__ void begin(const DecodeParams& p, const Work& work, int* ring) {
    segments = ring;
    u = blockIdx.x;
    enter_unit(p, work);
  }

  // Unit u, whose first stage goes to `slot`: located, its segment left in the ring.
  template <class Work>
  __device__ __forceinline__ void enter_unit(const DecodeParams& p, const Work& work) {
    const int segment = find_segment(work, u);
    if (threadIdx.x == 0) segments[slot] = segment;
    unit = unit_in_segment<kTokens, kUnitRows>(p, work, u, segment);
    kt = unit.kt_begin();
    loader.start(p, work, unit);
  }

  // The next stage's copies (its kParts) into the next slot; the caller commits.
  template <Parts kParts, class Work>
  __device__ __forceinline__ void step(const DecodeParams& p, const Work& work, uint32_t base,
                                       std::uint8_t* base_ptr) {
    if (loading) {
      loader.template load<kParts>(p, kt, base + slot * S::kStageBytes,
                                   base_ptr + slot * S::kStageBytes);
      kt += S::kSubTiles;
    }
    slot = slot + 1 == S::kStages ? 0 : slot + 1;
    if (loading && kt >= unit.kt_end) {
      u += gridDim.x;
      loading = u < work.units;
      if (loading) enter_unit(p, work);
    }
  }
};

}  // namespace metrale::cuda::sm90::decode
