// The decode family's main kernel (sm_90a): grouped NVFP4 GEMM for few rows per expert, where the
// product is a stream of weights and the work is to keep HBM busy.
//
//   out[p][i, n] = sum_k act[i, k] * W[p][e(i)][n, k]      (fp32 sums in chunk order, bf16 out)
//
// Orientation as in the tiled family: 64 weight rows are the wgmma M side, the expert's tokens
// (up to kTokens) its N side. One warpgroup per CTA; the grid is persistent (resident CTAs), each
// CTA walks the units blockIdx.x, + gridDim.x, ... of the plan kernel's work list.
//
// Data path:
//  1. locate: a unit's segment by binary search over the unit prefix cached in shared memory.
//  2. load: cp.async of kSubTiles k-tiles (64 K each) per stage: the tile's activation rows
//     (already gathered and put in decode order by the plan kernel, so rows are contiguous), 64
//     weight rows of packed codes, their block scales. The loader runs `kStages - 1` stages ahead
//     and crosses unit boundaries, so the pipeline never drains between the units of a CTA.
//  3. decode (fp4_bits.cuh): per thread and k-tile, block c of rows r and r + 8 (two 8-byte
//     loads) and their two scales (one conversion) become the A fragments of four k16 steps with
//     bit moves (a multiply) and bf16 multiplies.
//  4. wgmma, A from registers, B (activations) from the 128-byte-swizzled stage; software
//     pipelined: the decode of stage i + 1 runs while the wgmmas of stage i do.
//  5. fold: at each chunk's end the chunk sum joins the running total (or, in a split tile, is
//     left in the workspace); at a unit's end the total x scale_2 x 2^7 becomes bf16 rows, or the
//     last unit of a split tile folds every chunk's partial in order and writes them.
#pragma once

#include <cuda_bf16.h>

#include <cstdint>

#include "cuda/sm90/decode/decode_params.hpp"
#include "cuda/sm90/decode/fp4_bits.cuh"
#include "cuda/sm90/primitives.cuh"
#include "cuda/sm90/wgmma_ops.cuh"
#include "format/layouts.hpp"

namespace metrale::cuda::sm90::decode {

template <int kTokens>
struct Shape {
  static constexpr int kThreads = 128;
  // A stage is kSubTiles k-tiles of 64: the barrier, the waits and the loader's bookkeeping are
  // paid once per stage, so narrow tiles (where they dominate) take 256 K a stage.
  static constexpr int kSubTiles = kTokens <= 16 ? 4 : 2;
  // Up to 32 tokens: at most 128 registers and ~55 KB of stages, so that 4 CTAs (16 warps) share
  // an SM and keep its issue slots busy; each still has 2 stages in flight. 32 tokens at 4
  // sub-tiles a stage took 81 KB and 192 registers, 2 CTAs an SM: Mixtral gate_up at T = 64 ran
  // 345 us that way and 320-325 us this way (docs/perf.md, 2026-12-02, second session).
  static constexpr int kStages = kTokens <= 16 ? 3 : kTokens <= 64 ? 4 : 3;
  static constexpr int kMinCtasPerSm = kTokens <= 32 ? 4 : 1;
  static constexpr int kActBytes = kTokens * kSwizzleRowBytes;      // kTokens x 64 bf16
  static constexpr int kWeightBytes = kRows * kKTile / 2;          // 64 rows x 64 codes
  static constexpr int kScaleBytes = static_cast<int>(format::kSfbTileBytes);
  static constexpr int kWeightsAt = kSubTiles * kActBytes;         // sub-tile j at + j x bytes
  static constexpr int kScalesAt = kWeightsAt + kSubTiles * kWeightBytes;
  static constexpr int kStageBytes =
      (kScalesAt + kSubTiles * kScaleBytes + kSwizzleAtomBytes - 1) / kSwizzleAtomBytes *
      kSwizzleAtomBytes;
  static constexpr int kAcc = kTokens / 2;               // fp32 accumulators per thread
  static constexpr int kFoldAcc = kAcc < 32 ? kAcc : 32;  // those of the first kFoldMaxRows tokens
  // Every thread copies the same pieces of a sub-tile: activations in pieces of 16 bytes (8 for
  // 8-token tiles, so that all 128 threads have one) and 16 bytes of codes; rows past the tile's
  // are zero fill, not a skipped copy. So no copy waits behind a per-thread branch, and ptxas
  // issues a stage's copies back to back (116 -> 38 instructions a stage at 8 tokens).
  static constexpr int kActPieceBytes = kTokens >= 16 ? 16 : 8;
  static constexpr int kActPiecesPerRow = kSwizzleRowBytes / kActPieceBytes;
  static constexpr int kActPieceRows = kThreads / kActPiecesPerRow;  // between a thread's pieces
  static constexpr int kActPerThread = kActBytes / kActPieceBytes / kThreads;
  // The whole 512-byte SFB tile: 4 bytes a thread, or from 32 tokens 16 bytes by the first warp
  // (a warp-uniform branch), where 128 threads' scale addresses pushed the kernel past its 128
  // registers (12 -> 40 bytes of spills) and cost 9 % (Mixtral T = 64, docs/perf.md).
  static constexpr int kScaleCopiers = kTokens >= 32 ? 32 : kThreads;
  static constexpr int kScalePieceBytes = kScaleBytes / kScaleCopiers;
  static constexpr int kPipelineBytes = kStages * kStageBytes + kSwizzleAtomBytes;

  static_assert(kTokens % 8 == 0 && kTokens <= 256, "kTokens: a wgmma N in 8..256");
  static_assert(kSubTiles % 2 == 0, "A-fragment buffers alternate: a stage starts on buffer 0");
  static_assert(16 % kSubTiles == 0, "chunks (multiples of 16 k-tiles) hold whole stages");
  static_assert(kActBytes % kSwizzleAtomBytes == 0, "every sub-tile must stay 1024-aligned");
  static_assert(kActPerThread * kActPieceBytes * kThreads == kActBytes &&
                    kWeightBytes == 16 * kThreads && kScalePieceBytes * kScaleCopiers == kScaleBytes,
                "each thread copies whole pieces, as many as every other thread");
  static_assert(kFoldMaxRows <= 2 * kFoldAcc || kTokens < kFoldMaxRows,
                "the running total must hold the columns of every folded expert");
  static_assert(kPipelineBytes + (kMaxExperts + 1) * 4 <= 227 * 1024,
                "stages and the unit table must fit sm_90's 227 KB");
};

struct Unit {
  std::int32_t expert, proj, n0, row_begin, rows;
  std::int32_t tile;            // counter of a split tile
  std::int32_t kt_begin, kt_end, chunk_tiles, chunks, splits, fold_blocks;
  std::int64_t partial;         // float offset of the tile's partial slots
};

// Step 1: unit u of the work list.
template <int kTokens>
__device__ __forceinline__ Unit locate_unit(const DecodeParams& p, const std::int32_t* unit_first,
                                            int segments, int u) {
  int lo = 0, hi = segments - 1;
  while (lo < hi) {
    const int mid = (lo + hi + 1) / 2;
    if (unit_first[mid] <= u) lo = mid; else hi = mid - 1;
  }
  const Segment seg = p.segments[lo];
  const int local = u - unit_first[lo];
  const int range = local % seg.splits, tile = local / seg.splits;
  const int n_tile = tile % p.n_tiles, rest = tile / p.n_tiles;
  const int token_tile = rest / p.proj_count;
  Unit unit;
  unit.expert = seg.expert;
  unit.proj = rest % p.proj_count;
  unit.n0 = n_tile * kRows;
  unit.row_begin = seg.row_begin + token_tile * kTokens;
  unit.rows = min(kTokens, seg.rows - token_tile * kTokens);
  unit.tile = seg.first_tile + tile;
  unit.chunk_tiles = seg.chunk_tiles;
  unit.chunks = seg.chunks;
  unit.splits = seg.splits;
  unit.fold_blocks = seg.fold_blocks;
  const int first_chunk = range * seg.chunks / seg.splits;
  const int end_chunk = (range + 1) * seg.chunks / seg.splits;
  const int k_tiles = (p.k + kKTile - 1) / kKTile;
  unit.kt_begin = first_chunk * seg.chunk_tiles;
  // Whole stages: the k-tiles past K in the last one are loaded as zeros.
  constexpr int kSub = Shape<kTokens>::kSubTiles;
  unit.kt_end = (min(end_chunk * seg.chunk_tiles, k_tiles) + kSub - 1) / kSub * kSub;
  unit.partial = seg.first_partial +
                 static_cast<std::int64_t>(tile) * seg.chunks * seg.fold_blocks * 8 * kRows;
  return unit;
}

// Step 2: this thread's cp.async share of a stage. Activation piece i of the thread is row
// tid / kActPiecesPerRow + kActPieceRows i, piece tid % kActPiecesPerRow of it, so one base
// pointer and a count of real rows describe them all; every address is set up once per unit and
// a stage adds k-tile offsets only. A stage wholly inside K with SFB scales (all but a unit's last
// when K is not a multiple of the stage) copies with no predicate and no branch.
template <int kTokens>
struct StageLoader {
  using S = Shape<kTokens>;
  const std::uint8_t* act = nullptr;     // piece 0 at k-tile 0 (the table's base when no row)
  std::int32_t act_pieces = 0;           // pieces 0 .. act_pieces - 1 are real rows
  const std::uint8_t* weight = nullptr;  // this thread's 16 bytes at k-tile 0
  bool weight_real = false;              // its weight row is < N
  const std::uint8_t* scale = nullptr;   // this thread's scale piece at k-tile 0, or null
  std::int32_t scale_stride = 0;         // bytes per k-tile
  std::int32_t scale_dst = 0;            // its place in a sub-tile's scale slot
  std::int32_t n0 = 0;
  const std::uint8_t* expert_scales = nullptr;

  __device__ void start(const DecodeParams& p, const Unit& u) {
    const int tid = threadIdx.x;
    const int first_row = tid / S::kActPiecesPerRow, column = tid % S::kActPiecesPerRow;
    act_pieces = first_row < u.rows ? (u.rows - first_row + S::kActPieceRows - 1) / S::kActPieceRows : 0;
    act = act_pieces > 0 ? reinterpret_cast<const std::uint8_t*>(p.act) +
                               (static_cast<std::size_t>(u.row_begin) + first_row) * act_stride(p.k) * 2 +
                               column * S::kActPieceBytes
                         : reinterpret_cast<const std::uint8_t*>(p.act);
    const ExpertEntry entry = p.table[u.proj * p.num_experts + u.expert];
    const int w = tid / 2, c = tid % 2;
    weight_real = u.n0 + w < p.n;
    weight = weight_real ? static_cast<const std::uint8_t*>(entry.weight) +
                               static_cast<std::size_t>(u.n0 + w) * (p.k / 2) + c * 16
                         : reinterpret_cast<const std::uint8_t*>(p.act);
    n0 = u.n0;
    expert_scales = entry.scale;
    scale = nullptr;
    if (p.scale_sfb) {
      // The whole 128-row SFB tile (Shape::kScaleCopiers threads): the 64 rows' half is 8 of
      // every 16 bytes, so the other half costs no 32-byte sector more, and the copy no branch.
      scale = entry.scale + format::sfb_tile_offset(u.n0, 0, p.k) + tid * S::kScalePieceBytes;
      scale_stride = format::kSfbTileBytes;
      scale_dst = tid * S::kScalePieceBytes;
    } else if (p.scale_vec16) {
      const int i = tid / 4, c16 = tid % 4;  // 4 block rows x 4 pieces of 16 scales
      if (tid < 16 && u.n0 + c16 * 16 < p.n) {
        scale = entry.scale + static_cast<std::size_t>(i) * p.n + u.n0 + c16 * 16;
        scale_stride = 4 * p.n;
        scale_dst = i * kRows + c16 * 16;
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

  // This thread's 16 bytes of codes in a sub-tile: row tid / 2, half tid % 2, the halves swapped
  // every 4 rows (decode_offsets reads them so).
  static __device__ __forceinline__ uint32_t weight_dst() {
    const int w = threadIdx.x / 2, c = threadIdx.x % 2;
    return w * 32 + ((c ^ ((w >> 2) & 1)) * 16);
  }

  // This thread's piece of an SFB tile (the first kScaleCopiers threads copy it).
  static __device__ __forceinline__ void copy_scale_piece(uint32_t dst, const std::uint8_t* src) {
    if (S::kScaleCopiers == S::kThreads || threadIdx.x < S::kScaleCopiers)
      cp_async_zfill<S::kScalePieceBytes>(dst, src, true);
  }

  __device__ __forceinline__ const std::uint8_t* act_piece(const DecodeParams& p, int i) const {
    return act + static_cast<std::size_t>(i) * S::kActPieceRows * act_stride(p.k) * 2;
  }

  // The stage of k-tiles [kt0, kt0 + kSubTiles).
  __device__ __forceinline__ void load(const DecodeParams& p, int kt0, uint32_t stage,
                                       std::uint8_t* stage_ptr) const {
    if ((kt0 + S::kSubTiles) * kKTile <= p.k && p.scale_sfb) {
      const std::uint8_t* w = weight + kt0 * (kKTile / 2);
      const std::uint8_t* sc = scale + static_cast<std::size_t>(kt0) * format::kSfbTileBytes;
      const uint32_t weights_at = stage + S::kWeightsAt + weight_dst();
#pragma unroll
      for (int j = 0; j < S::kSubTiles; ++j) {
#pragma unroll
        for (int i = 0; i < S::kActPerThread; ++i)
          cp_async_zfill<S::kActPieceBytes>(
              stage + act_dst(i) + j * S::kActBytes,
              (i < act_pieces ? act_piece(p, i) : act) + (kt0 + j) * (kKTile * 2), i < act_pieces);
        cp_async_16(weights_at + j * S::kWeightBytes, w + j * (kKTile / 2), weight_real);
        copy_scale_piece(stage + S::kScalesAt + j * S::kScaleBytes + scale_dst,
                         sc + j * format::kSfbTileBytes);
      }
      return;
    }
#pragma unroll
    for (int j = 0; j < S::kSubTiles; ++j)
      load_sub_tile(p, kt0 + j, stage + j * S::kActBytes, stage + S::kWeightsAt + j * S::kWeightBytes,
                    stage + S::kScalesAt + j * S::kScaleBytes,
                    stage_ptr + S::kScalesAt + j * S::kScaleBytes);
  }

  // The general path: K predicates, any scale layout.
  __device__ void load_sub_tile(const DecodeParams& p, int kt, uint32_t act_base,
                                uint32_t weight_base, uint32_t scale_dst_base,
                                std::uint8_t* scale_ptr) const {
    const int tid = threadIdx.x;
    const bool act_in_k = kt * kKTile < p.k;  // a k-tile of the padded rows (zeros past K)
#pragma unroll
    for (int i = 0; i < S::kActPerThread; ++i) {
      // A zero-filled piece still names a valid address (the table's first row).
      const bool real = i < act_pieces && act_in_k;
      const void* src = real ? act_piece(p, i) + kt * kKTile * 2 : static_cast<const void*>(p.act);
      cp_async_zfill<S::kActPieceBytes>(act_base + act_dst(i), src, real);
    }
    const bool real_weight = weight_real && kt * (kKTile / 2) + (tid % 2) * 16 < p.k / 2;
    cp_async_16(weight_base + weight_dst(),
                real_weight ? weight + kt * (kKTile / 2) : static_cast<const std::uint8_t*>(weight),
                real_weight);
    if (kt * kKTile >= p.k) {
      // Past K: zero scales, so the (zero-filled) codes decode to zeros, never NaN.
      if (tid < S::kScaleBytes / 16) cp_async_16(scale_dst_base + tid * 16, p.act, false);
      return;
    }
    if (p.scale_sfb) {
      copy_scale_piece(scale_dst_base + scale_dst, scale + static_cast<std::size_t>(kt) * scale_stride);
    } else if (p.scale_vec16) {
      if (scale) {
        const bool real = kt * 4 + scale_dst / kRows < p.k / 16;
        cp_async_16(scale_dst_base + scale_dst,
                    real ? scale + static_cast<std::size_t>(kt) * scale_stride : scale, real);
      }
    } else {
      // [K/16, N] with rows that are not 16-byte aligned: plain loads, visible after the barrier
      // that precedes this stage's use.
      for (int idx = tid; idx < 4 * kRows; idx += S::kThreads) {
        const int i = idx / kRows, r = idx % kRows, b = kt * 4 + i;
        const bool real = b < p.k / 16 && n0 + r < p.n;
        scale_ptr[idx] = real ? __ldg(expert_scales + static_cast<std::size_t>(b) * p.n + n0 + r) : 0;
      }
    }
  }
};

// Where this thread's codes and block scales sit in a sub-tile. Thread (warp w, lane l) decodes
// weight rows r = 16 w + l/4 and r + 8, block c = l % 4 of the k-tile (format::decode_k_source):
// 8 bytes of codes and one scale per row. The offsets depend on the unit's first row modulo the
// 128-row SFB tile only.
struct DecodeOffsets {
  std::uint32_t codes;    // row r's 8 bytes; row r + 8: + 8 x 32
  std::uint32_t scale_r;  // the scale byte of (r, c) in the sub-tile's scale slot
  std::uint32_t scale_r8; // of (r + 8, c)
};

__device__ __forceinline__ DecodeOffsets decode_offsets(const DecodeParams& p, int n0) {
  const int lane = threadIdx.x % 32, c = lane % 4;
  const int r = (threadIdx.x / 32) * 16 + lane / 4;  // each warp owns 16 weight rows
  DecodeOffsets o;
  // A row's 32 bytes hold blocks 0..3; its 16-byte halves swap every 4 rows (the loader's layout).
  o.codes = r * 32 + (((c / 2) ^ ((r >> 2) & 1)) * 16) + (c % 2) * 8;
  if (p.scale_sfb) {
    const int row = n0 % static_cast<int>(format::kSfbTileRows) + r;
    o.scale_r = format::sfb_row_in_tile(row) + c;
    o.scale_r8 = format::sfb_row_in_tile(row + 8) + c;
  } else {
    o.scale_r = c * kRows + r;
    o.scale_r8 = o.scale_r + 8;
  }
  return o;
}

// Step 3: the A fragments of a sub-tile's four k16 steps. Word q of a row's 8 bytes feeds steps
// 2q and 2q + 1 (pairs 0, 1 and 2, 3); both rows' scales are converted by one instruction.
__device__ __forceinline__ void decode_sub_tile(const std::uint8_t* weights,
                                                const std::uint8_t* scales, const DecodeOffsets& o,
                                                uint32_t (&frag)[4][4]) {
  const uint32_t both = scales[o.scale_r] | (static_cast<uint32_t>(scales[o.scale_r8]) << 8);
  const uint32_t pair = e4m3x2_to_scaled_bf16x2(both);
  const uint32_t s0 = broadcast_low(pair), s1 = broadcast_high(pair);
  const uint2 row_r = *reinterpret_cast<const uint2*>(weights + o.codes);
  const uint2 row_r8 = *reinterpret_cast<const uint2*>(weights + o.codes + 8 * 32);
#pragma unroll
  for (int q = 0; q < 2; ++q) {
    uint32_t p0[4], p1[4];
    e2m1_pairs(q == 0 ? row_r.x : row_r.y, p0);
    e2m1_pairs(q == 0 ? row_r8.x : row_r8.y, p1);
    frag[2 * q][0] = bf16x2_mul(p0[0], s0);
    frag[2 * q][1] = bf16x2_mul(p1[0], s1);
    frag[2 * q][2] = bf16x2_mul(p0[1], s0);
    frag[2 * q][3] = bf16x2_mul(p1[1], s1);
    frag[2 * q + 1][0] = bf16x2_mul(p0[2], s0);
    frag[2 * q + 1][1] = bf16x2_mul(p1[2], s1);
    frag[2 * q + 1][2] = bf16x2_mul(p0[3], s0);
    frag[2 * q + 1][3] = bf16x2_mul(p1[3], s1);
  }
}

// Step 4: a sub-tile's four wgmmas; the first starts from zero when the sub-tile opens a chunk.
// `act` is the descriptor of the sub-tile's activations.
template <int kTokens>
__device__ __forceinline__ void issue_sub_tile(uint64_t act, const uint32_t (&frag)[4][4],
                                            float (&acc)[kTokens / 2], bool opens_chunk) {
  wgmma_fence();
#pragma unroll
  for (int s = 0; s < 4; ++s)
    Wgmma<kTokens>::rs(acc, frag[s], descriptor_plus(act, s * 32), (s == 0 && opens_chunk) ? 0 : 1);
  wgmma_commit();
}

// Step 5 helpers. Accumulator i of a thread is weight row 16 warp + lane/4 + 8 (i%4 >= 2), token
// 8 (i/4) + 2 (lane%4) + i%2 (the wgmma D fragment).
template <int kCount>
__device__ __forceinline__ void store_rows(const DecodeParams& p, const Unit& u,
                                           const float (&values)[kCount]) {
  const int lane = threadIdx.x % 32;
  const int channel = u.n0 + (threadIdx.x / 32) * 16 + lane / 4;
  const float factor = p.table[u.proj * p.num_experts + u.expert].scale_2 * kEpilogueFactor;
  std::uint16_t* out = p.out[u.proj];
#pragma unroll
  for (int i = 0; i < kCount; ++i) {
    const int n = channel + ((i % 4) >= 2 ? 8 : 0);
    const int token = 8 * (i / 4) + 2 * (lane % 4) + (i % 2);
    if (n < p.n && token < u.rows)
      out[static_cast<std::size_t>(u.row_begin + token) * p.n + n] =
          __bfloat16_as_ushort(__float2bfloat16_rn(__fmul_rn(values[i], factor)));
  }
}

template <int kCount, int kArray>
__device__ __forceinline__ void store_partial(const DecodeParams& p, const Unit& u, int chunk,
                                              const float (&values)[kArray]) {
  static_assert(kCount <= kArray, "a partial keeps a prefix of the accumulators");
  float* slot = p.partials + u.partial + static_cast<std::int64_t>(chunk) * u.fold_blocks * 8 * kRows;
#pragma unroll
  for (int i = 0; i < kCount; ++i)
    if (i < 4 * u.fold_blocks) __stcg(slot + i * 128 + threadIdx.x, values[i]);
}

// The last unit of a split tile: sum every chunk's partial in chunk order.
template <int kCount>
__device__ __forceinline__ void fold_partials(const DecodeParams& p, const Unit& u,
                                              float (&total)[kCount]) {
  for (int chunk = 0; chunk < u.chunks; ++chunk) {
    const float* slot =
        p.partials + u.partial + static_cast<std::int64_t>(chunk) * u.fold_blocks * 8 * kRows;
#pragma unroll
    for (int i = 0; i < kCount; ++i) {
      const float v = i < 4 * u.fold_blocks ? __ldcg(slot + i * 128 + threadIdx.x) : 0.f;
      total[i] = chunk == 0 ? v : __fadd_rn(total[i], v);
    }
  }
}

template <int kTokens>
__global__ void __launch_bounds__(Shape<kTokens>::kThreads, Shape<kTokens>::kMinCtasPerSm)
    decode_kernel(const __grid_constant__ DecodeParams p) {
#if defined(__CUDA_ARCH__) && (__CUDA_ARCH__ == 900) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
  using S = Shape<kTokens>;
  extern __shared__ std::uint8_t smem_raw[];
  __shared__ int last_unit_of_tile;
  // Launched as a programmatic dependent of the plan kernel: wait here for its writes.
  asm volatile("griddepcontrol.wait;\n" ::: "memory");
  const int segments = p.totals->segments, units = p.totals->units;
  if (static_cast<int>(blockIdx.x) >= units) return;

  const uint32_t base =
      (smem_address(smem_raw) + kSwizzleAtomBytes - 1) & ~uint32_t(kSwizzleAtomBytes - 1);
  std::uint8_t* base_ptr = smem_raw + (base - smem_address(smem_raw));
  auto* unit_first = reinterpret_cast<std::int32_t*>(base_ptr + S::kStages * S::kStageBytes);
  const int cached = min(segments, p.max_segments);
  for (int i = threadIdx.x; i <= cached; i += S::kThreads) unit_first[i] = p.unit_first[i];
  __syncthreads();

  // The loader's cursor runs kStages - 1 stages ahead of the consumer's, over the same units.
  int load_u = blockIdx.x;
  Unit load_unit = locate_unit<kTokens>(p, unit_first, cached, load_u);
  int load_kt = load_unit.kt_begin;
  StageLoader<kTokens> loader;
  loader.start(p, load_unit);
  bool loading = true;
  int load_slot = 0;
  auto load_next = [&] {
    if (loading) {
      loader.load(p, load_kt, base + load_slot * S::kStageBytes, base_ptr + load_slot * S::kStageBytes);
      load_kt += S::kSubTiles;
      if (load_kt >= load_unit.kt_end) {
        load_u += gridDim.x;
        loading = load_u < units;
        if (loading) {
          load_unit = locate_unit<kTokens>(p, unit_first, cached, load_u);
          load_kt = load_unit.kt_begin;
          loader.start(p, load_unit);
        }
      }
    }
    load_slot = load_slot + 1 == S::kStages ? 0 : load_slot + 1;
    cp_async_commit();
  };
  for (int s = 0; s < S::kStages - 1; ++s) load_next();

  // The consumer: stage by stage; chunks and units end at stage boundaries.
  int unit_u = blockIdx.x;
  Unit unit = locate_unit<kTokens>(p, unit_first, cached, unit_u);
  int kt = unit.kt_begin;               // first k-tile of the stage being consumed
  int chunk = kt / unit.chunk_tiles;    // index of the chunk it belongs to
  int chunk_stages_left = unit.chunk_tiles / S::kSubTiles;
  bool chunk_opens = true;
  int slot = 0;
  float acc[S::kAcc];
  float total[S::kFoldAcc];
#pragma unroll
  for (int i = 0; i < S::kAcc; ++i) acc[i] = 0.f;
#pragma unroll
  for (int i = 0; i < S::kFoldAcc; ++i) total[i] = 0.f;
  uint32_t frag[2][4][4];
  DecodeOffsets offsets = decode_offsets(p, unit.n0);
  auto decode = [&](const std::uint8_t* stage_ptr, int j, uint32_t(&into)[4][4]) {
    decode_sub_tile(stage_ptr + S::kWeightsAt + j * S::kWeightBytes,
                    stage_ptr + S::kScalesAt + j * S::kScaleBytes, offsets, into);
  };
  cp_async_wait<S::kStages - 2>();
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");  // cp.async writes -> wgmma
  __syncthreads();
  decode(base_ptr, 0, frag[0]);

  bool more = true;
  while (more) {
    const uint32_t stage = base + slot * S::kStageBytes;
    const uint64_t stage_descriptor = sw128_descriptor(stage);
    const std::uint8_t* stage_ptr = base_ptr + slot * S::kStageBytes;
    const int next_slot = slot + 1 == S::kStages ? 0 : slot + 1;
    const bool unit_ends = kt + S::kSubTiles >= unit.kt_end;
    const bool chunk_ends = unit_ends || chunk_stages_left == 1;
    more = !unit_ends || unit_u + static_cast<int>(gridDim.x) < units;
    Unit next_unit = unit;
#pragma unroll
    for (int j = 0; j < S::kSubTiles; ++j) {
      // Sub-tile j runs while j + 1 is decoded (at the stage's end: the next stage's first).
      // (k-tiles past K, in a unit's last stage, hold zeros: issued all the same, so that no
      // branch sits between the wgmmas and the accumulators they own.)
      issue_sub_tile<kTokens>(descriptor_plus(stage_descriptor, j * S::kActBytes), frag[j % 2], acc,
                              chunk_opens && j == 0);
      wgmma_wait<1>();
#pragma unroll
      for (int s = 0; s < 4; ++s)
#pragma unroll
        for (int q = 0; q < 4; ++q) fence_operand(frag[(j + 1) % 2][s][q]);
      if (j + 1 < S::kSubTiles) {
        decode(stage_ptr, j + 1, frag[(j + 1) % 2]);
      } else {
        cp_async_wait<S::kStages - 3>();  // the next stage has landed
        asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
        __syncthreads();
        load_next();  // refills the slot of the previous stage (its wgmmas are done)
        if (unit_ends && more) {
          next_unit = locate_unit<kTokens>(p, unit_first, cached, unit_u + gridDim.x);
          offsets = decode_offsets(p, next_unit.n0);
        }
        if (more) decode(base_ptr + next_slot * S::kStageBytes, 0, frag[0]);
      }
    }
    chunk_opens = false;
    --chunk_stages_left;
    if (chunk_ends) {
      // 5. fold: the chunk's sum joins the running total, or is left for the split's last unit.
      wgmma_wait<0>();
#pragma unroll
      for (int i = 0; i < S::kAcc; ++i) fence_operand(acc[i]);
      if (unit.splits > 1) {
        store_partial<S::kFoldAcc>(p, unit, chunk, acc);
      } else if (unit.chunks > 1) {
#pragma unroll
        for (int i = 0; i < S::kFoldAcc; ++i) total[i] = chunk == 0 ? acc[i] : __fadd_rn(total[i], acc[i]);
      }
      ++chunk;
      chunk_stages_left = unit.chunk_tiles / S::kSubTiles;
      chunk_opens = true;
    }
    if (unit_ends) {
      if (unit.splits > 1) {
        __threadfence();
        __syncthreads();
        if (threadIdx.x == 0)
          last_unit_of_tile = atomicAdd(p.counters + unit.tile, 1u) == unsigned(unit.splits - 1);
        __syncthreads();
        if (last_unit_of_tile) {
          __threadfence();
          fold_partials<S::kFoldAcc>(p, unit, total);
          store_rows(p, unit, total);
        }
      } else if (unit.chunks > 1) {
        store_rows(p, unit, total);
      } else {
        store_rows(p, unit, acc);
      }
      unit_u += gridDim.x;
      unit = next_unit;
      kt = unit.kt_begin;
      chunk = kt / unit.chunk_tiles;
      chunk_stages_left = unit.chunk_tiles / S::kSubTiles;
    } else {
      kt += S::kSubTiles;
    }
    slot = next_slot;
  }
  wgmma_wait<0>();
  cp_async_wait<0>();
#elif defined(__CUDA_ARCH__)
  __trap();  // built for a target without wgmma: fail loudly instead of leaving `out` unwritten
#endif
}

}  // namespace metrale::cuda::sm90::decode
