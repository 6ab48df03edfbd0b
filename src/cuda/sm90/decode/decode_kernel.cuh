// The decode family's main kernel (sm_90a): grouped NVFP4 GEMM for few rows per expert, where the
// product is a stream of weights and the work is to keep HBM busy.
//
//   out[p][i, n] = sum_k act[i, k] * W[p][e(i)][n, k]      (fp32 sums in chunk order, bf16 out)
//
// Orientation as in the tiled family: weight rows are the wgmma M side, 64 a wgmma (a unit has one
// or two such halves: Shape::kHalves), the expert's tokens (up to kTokens) its N side, both halves
// on the same activations. One warpgroup per CTA; the grid is persistent (resident CTAs), each
// CTA walks the units blockIdx.x, + gridDim.x, ... of a work list: the plan kernel's, in the
// workspace (decode_kernel), or, with host offsets and few experts, the host's, in the launch's
// parameters (decode_kernel_host).
//
// Data path (steps 1 and 2 in decode_loader.cuh):
//  1. locate: a unit's segment by binary search over the unit prefix cached in shared memory.
//  2. load: cp.async of kSubTiles k-tiles (64 K each) per stage: the tile's activation rows
//     (already gathered and put in decode order by the plan or staging kernel, so rows are
//     contiguous), the unit's weight rows of packed codes, their block scales. The loader runs
//     `kStages - 1` stages ahead and crosses unit boundaries, so the pipeline never drains
//     between the units of a CTA; a host-planned CTA copies its first stages' weights before
//     the staging kernel has finished.
//  3. decode (fp4_bits.cuh): per thread, k-tile and half, block c of rows r and r + 8 (two 8-byte
//     loads) and their two scales (one conversion) become the A fragments of four k16 steps with
//     bit moves (a multiply) and bf16 multiplies.
//  4. wgmma, A from registers, B (activations) from the 128-byte-swizzled stage; software
//     pipelined: the decode of step i + 1 (a k-tile of a half) runs while the wgmmas of step i do.
//  5. fold: at each chunk's end the chunk sum joins the running total (or, in a split tile, is
//     left in the workspace); at a unit's end the total x scale_2 x 2^7 becomes bf16 rows, or the
//     last unit of a split tile folds every chunk's partial in order and writes them.
#pragma once

#include <cuda_bf16.h>

#include <cstdint>

#include "cuda/sm90/decode/decode_loader.cuh"
#include "cuda/sm90/decode/decode_params.hpp"
#include "cuda/sm90/decode/fp4_bits.cuh"
#include "cuda/sm90/primitives.cuh"
#include "cuda/sm90/wgmma_ops.cuh"
#include "format/bf16.hpp"
#include "format/fragment_order.hpp"
#include "format/layouts.hpp"

namespace metrale::cuda::sm90::decode {

// Where this thread's codes and block scales sit in a sub-tile. Thread (warp w, lane l) decodes
// weight rows r = 16 w + l/4 and r + 8 of each half, block c = l % 4 of the k-tile
// (format::decode_k_source): 8 bytes of codes and one scale per row. The offsets depend on the
// unit's first row modulo the 128-row SFB tile only.
struct DecodeOffsets {
  std::uint32_t codes;     // row r's 8 bytes in a half; row r + 8: + 8 x 32
  std::uint32_t scale_r;   // the scale byte of (r, c) of the first half in the scale slot
  std::uint32_t scale_r8;  // of (r + 8, c)
};

// The second half's scales lie this far past the first's: 64 rows on in an SFB tile, or a row of
// the [4][kUnitRows] slot. (Read from the parameters at each use: two offsets more held in
// registers cost the host-planned 8-token kernel spill reloads in its loop.)
__device__ __forceinline__ std::uint32_t second_half_scales(const DecodeParams& p) {
  return p.scale_sfb ? static_cast<std::uint32_t>(format::sfb_row_in_tile(kRows)) : kRows;
}

template <int kUnitRows>
__device__ __forceinline__ DecodeOffsets decode_offsets(const DecodeParams& p, int n0) {
  const int lane = threadIdx.x % 32, c = lane % 4;
  const int r = (threadIdx.x / 32) * 16 + lane / 4;  // each warp owns 16 weight rows of a half
  DecodeOffsets o;
  // A row's 32 bytes hold blocks 0..3; its 16-byte halves swap every 4 rows (the loader's layout).
  o.codes = r * 32 + (((c / 2) ^ ((r >> 2) & 1)) * 16) + (c % 2) * 8;
  if (p.scale_sfb) {
    const int row = n0 % static_cast<int>(format::kSfbTileRows) + r;
    o.scale_r = format::sfb_row_in_tile(row) + c;
    o.scale_r8 = format::sfb_row_in_tile(row + 8) + c;
  } else {
    o.scale_r = c * kUnitRows + r;
    o.scale_r8 = o.scale_r + 8;
  }
  return o;
}

// Step 3: the A fragments of a sub-tile's four k16 steps. Word q of a row's 8 bytes feeds steps
// 2q and 2q + 1 (pairs 0, 1 and 2, 3); both rows' scales are converted by one instruction.
// kPrepacked: the weights are in format/prepack.hpp's layout (the same pairs, fewer operations).
// kFragments: prepacked in the fragment order (format/fragment_order.hpp), the activations in
// natural K order: the same 8 bytes and the same pairs, but step s of the sub-tile is block s,
// so each thread's scale pair (block c) is step c's, handed to its quad by shuffles; but for
// `halves_tail`, the k-tile of a row's K % 64 tail, which keeps the halves' layout (and the
// decode order: the staging's build_piece).
// `weights` and `scales`: the half's codes and scales in the sub-tile.
template <bool kPrepacked, bool kFragments = false>
__device__ __forceinline__ void decode_sub_tile(const std::uint8_t* weights,
                                                const std::uint8_t* scales, const DecodeOffsets& o,
                                                uint32_t (&frag)[4][4], bool halves_tail = false) {
  const uint32_t both = scales[o.scale_r] | (static_cast<uint32_t>(scales[o.scale_r8]) << 8);
  const uint32_t pair = e4m3x2_to_scaled_bf16x2(both);
  const uint32_t s0 = broadcast_low(pair), s1 = broadcast_high(pair);
  const uint2 row_r = *reinterpret_cast<const uint2*>(weights + o.codes);
  const uint2 row_r8 = *reinterpret_cast<const uint2*>(weights + o.codes + 8 * 32);
  if constexpr (kFragments) {
    if (!halves_tail) {
      uint32_t step_pairs[4];
      quad_shared(pair, step_pairs);
      fragment_order_frags(row_r, row_r8, step_pairs, frag);
      return;
    }
  }
#pragma unroll
  for (int q = 0; q < 2; ++q) {
    uint32_t p0[4], p1[4];
    e2m1_pairs_of<kPrepacked>(q == 0 ? row_r.x : row_r.y, p0);
    e2m1_pairs_of<kPrepacked>(q == 0 ? row_r8.x : row_r8.y, p1);
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

// Step 4: a sub-tile's four wgmmas (one statement: rs4); the first starts from zero when the
// sub-tile opens a chunk. `act` is the descriptor of the sub-tile's activations.
template <int kTokens>
__device__ __forceinline__ void issue_sub_tile(uint64_t act, const uint32_t (&frag)[4][4],
                                            float (&acc)[kTokens / 2], bool opens_chunk) {
  wgmma_fence();
  Wgmma<kTokens>::rs4(acc, frag, act, opens_chunk ? 0 : 1);
  wgmma_commit();
}

// Step 5 helpers. Accumulator i of a thread's half h is weight row 64 h + 16 warp + lane/4 + 8
// (i%4 >= 2), token 8 (i/4) + 2 (lane%4) + i%2 (the wgmma D fragment).
template <int kHalves, int kCount, class Work>
__device__ __forceinline__ void store_rows(const DecodeParams& p, const Work& work, const Unit& u,
                                           const float (&values)[kHalves][kCount]) {
  const int lane = threadIdx.x % 32;
  const int channel = u.n0 + (threadIdx.x / 32) * 16 + lane / 4;
  const float factor = work.entry(u.proj, u.expert).scale_2 * kEpilogueFactor;
  std::uint16_t* out = p.out[u.proj];
#pragma unroll
  for (int h = 0; h < kHalves; ++h)
#pragma unroll
    for (int i = 0; i < kCount; ++i) {
      const int n = channel + h * kRows + ((i % 4) >= 2 ? 8 : 0);
      const int token = 8 * (i / 4) + 2 * (lane % 4) + (i % 2);
      if (n < p.n && token < u.rows)
        out[static_cast<std::size_t>(u.row_begin + token) * p.n + n] =
            format::float_to_bf16(__fmul_rn(values[h][i], factor));
    }
}

// A chunk's partial: per half, 4 x fold_blocks floats a thread (8 x fold_blocks x 64).
template <int kTokens, int kUnitRows>
__device__ __forceinline__ float* partial_slot(const DecodeParams& p, const Unit& u, int chunk,
                                               int h) {
  const std::int64_t half_floats = static_cast<std::int64_t>(u.fold_blocks) * 8 * kRows;
  return p.partials + u.partial + (chunk * Shape<kTokens, kUnitRows>::kHalves + h) * half_floats;
}

template <int kTokens, int kUnitRows, int kArray>
__device__ __forceinline__ void store_partial(
    const DecodeParams& p, const Unit& u, int chunk,
    const float (&values)[Shape<kTokens, kUnitRows>::kHalves][kArray]) {
  using S = Shape<kTokens, kUnitRows>;
  static_assert(S::kFoldAcc <= kArray, "a partial keeps a prefix of the accumulators");
#pragma unroll
  for (int h = 0; h < S::kHalves; ++h) {
    float* slot = partial_slot<kTokens, kUnitRows>(p, u, chunk, h);
#pragma unroll
    for (int i = 0; i < S::kFoldAcc; ++i)
      if (i < 4 * u.fold_blocks) __stcg(slot + i * 128 + threadIdx.x, values[h][i]);
  }
}

// The last unit of a split tile: sum every chunk's partial in chunk order.
template <int kTokens, int kUnitRows>
__device__ __forceinline__ void fold_partials(
    const DecodeParams& p, const Unit& u,
    float (&total)[Shape<kTokens, kUnitRows>::kHalves][Shape<kTokens, kUnitRows>::kFoldAcc]) {
  using S = Shape<kTokens, kUnitRows>;
  for (int chunk = 0; chunk < u.chunks; ++chunk) {
#pragma unroll
    for (int h = 0; h < S::kHalves; ++h) {
      const float* slot = partial_slot<kTokens, kUnitRows>(p, u, chunk, h);
#pragma unroll
      for (int i = 0; i < S::kFoldAcc; ++i) {
        const float v = i < 4 * u.fold_blocks ? __ldcg(slot + i * 128 + threadIdx.x) : 0.f;
        total[h][i] = chunk == 0 ? v : __fadd_rn(total[h][i], v);
      }
    }
  }
}

// The stages of one of the unit's chunks. A chunk of a split expert is a multiple of 16 k-tiles
// (whole stages); an expert past kFoldMaxRows sums K in one chunk of all its k-tiles, whose last
// stage is part-filled when the k-tiles are not a multiple of kSubTiles (those past K load as
// zeros). Rounded down, such a chunk ended a stage early and its last stage opened a second sum
// that replaced the first: every row of such an expert was wrong (K = 1056, 17 k-tiles, at every
// width; gpt-oss's K = 2880, 45 k-tiles).
template <int kTokens, int kUnitRows>
__device__ __forceinline__ int chunk_stages(const Unit& u) {
  using S = Shape<kTokens, kUnitRows>;
  return (u.chunk_tiles + S::kSubTiles - 1) / S::kSubTiles;
}

// The first stage slot, 1024-aligned (the 128-byte swizzle's atom).
__device__ __forceinline__ uint32_t stage_base(std::uint8_t* smem_raw) {
  return (smem_address(smem_raw) + kSwizzleAtomBytes - 1) & ~uint32_t(kSwizzleAtomBytes - 1);
}

// Steps 3-5 over this CTA's units, the loader `cursor` already kStages - 1 stages ahead.
template <int kTokens, int kUnitRows, bool kPrepacked, bool kFragments, bool kTail, class Work>
__device__ __forceinline__ void run_units(const DecodeParams& p, const Work& work,
                                          LoadCursor<kTokens, kUnitRows>& cursor, uint32_t base,
                                          std::uint8_t* base_ptr) {
  using S = Shape<kTokens, kUnitRows>;
  __shared__ int last_unit_of_tile;
  auto load_next = [&] {
    cursor.template step<Parts::all>(p, work, base, base_ptr);
    cp_async_commit();
  };

  // The consumer: stage by stage; chunks and units end at stage boundaries.
  int unit_u = blockIdx.x;
  // Located before the loader's segments are visible.
  Unit unit = locate_unit<kTokens, kUnitRows>(p, work, unit_u);
  int kt = unit.kt_begin();                           // first k-tile of the stage being consumed
  int chunk = unit.first_chunk;                       // index of the chunk it belongs to
  int chunk_stages_left = chunk_stages<kTokens, kUnitRows>(unit);
  bool chunk_opens = true;
  int slot = 0;
  float acc[S::kHalves][S::kAcc];
  float total[S::kHalves][S::kFoldAcc];
#pragma unroll
  for (int h = 0; h < S::kHalves; ++h) {
#pragma unroll
    for (int i = 0; i < S::kAcc; ++i) acc[h][i] = 0.f;
#pragma unroll
    for (int i = 0; i < S::kFoldAcc; ++i) total[h][i] = 0.f;
  }
  uint32_t frag[2][4][4];
  DecodeOffsets offsets = decode_offsets<kUnitRows>(p, unit.n0);
  // kTail (the fragment order on rows with a K % 64 tail, in the halves' layout: decode_sub_tile)
  // only: the k-tile of the rows the next decode reads, set before each decode. Kept out of the
  // other kernels: its tests and moves cost ~8 instructions a sub-tile, ~3 % of a decode-bound
  // call (docs/perf.md, twenty-fifth session).
  int next_ktile = kt;
  // Step t of a stage: sub-tile t / kHalves, half t % kHalves.
  auto decode = [&](const std::uint8_t* stage_ptr, int t, uint32_t(&into)[4][4]) {
    const int j = t / S::kHalves, h = t % S::kHalves;
    const std::uint8_t* weights =
        stage_ptr + S::kWeightsAt + j * S::kWeightBytes + h * kHalfWeightBytes;
    const std::uint8_t* scales =
        stage_ptr + S::kScalesAt + j * S::kScaleBytes + (h ? second_half_scales(p) : 0);
    if constexpr (kFragments) {
      decode_sub_tile<kPrepacked, kFragments>(weights, scales, offsets, into,
                                              kTail && format::fragment_tail(p.k, next_ktile));
    } else {
      decode_sub_tile<kPrepacked>(weights, scales, offsets, into);
    }
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
    more = !unit_ends || unit_u + static_cast<int>(gridDim.x) < work.units;
    Unit next_unit = unit;
#pragma unroll
    for (int t = 0; t < S::kSteps; ++t) {
      // Step t runs while t + 1 is decoded (at the stage's end: the next stage's first).
      // (k-tiles past K, in a unit's last stage, hold zeros: issued all the same, so that no
      // branch sits between the wgmmas and the accumulators they own.)
      const int j = t / S::kHalves, h = t % S::kHalves;
      issue_sub_tile<kTokens>(descriptor_plus(stage_descriptor, j * S::kActBytes), frag[t % 2],
                              acc[h], chunk_opens && j == 0);
      wgmma_wait<1>();
#pragma unroll
      for (int s = 0; s < 4; ++s)
#pragma unroll
        for (int q = 0; q < 4; ++q) fence_operand(frag[(t + 1) % 2][s][q]);
      if (t + 1 < S::kSteps) {
        if constexpr (kTail) next_ktile = kt + (t + 1) / S::kHalves;
        decode(stage_ptr, t + 1, frag[(t + 1) % 2]);
      } else {
        cp_async_wait<S::kStages - 3>();  // the next stage has landed
        asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
        __syncthreads();
        load_next();  // refills the slot of the previous stage (its wgmmas are done)
        if (unit_ends && more) {
          next_unit = unit_in_segment<kTokens, kUnitRows>(p, work, unit_u + gridDim.x,
                                                          cursor.segments[next_slot]);
          offsets = decode_offsets<kUnitRows>(p, next_unit.n0);
        }
        if constexpr (kTail) next_ktile = unit_ends ? next_unit.kt_begin() : kt + S::kSubTiles;
        if (more) decode(base_ptr + next_slot * S::kStageBytes, 0, frag[0]);
      }
    }
    chunk_opens = false;
    --chunk_stages_left;
    if (chunk_ends) {
      // 5. fold: the chunk's sum joins the running total, or is left for the split's last unit.
      wgmma_wait<0>();
#pragma unroll
      for (int h = 0; h < S::kHalves; ++h)
#pragma unroll
        for (int i = 0; i < S::kAcc; ++i) fence_operand(acc[h][i]);
      if (unit.splits > 1) {
        store_partial<kTokens, kUnitRows>(p, unit, chunk, acc);
      } else if (unit.chunks > 1) {
#pragma unroll
        for (int h = 0; h < S::kHalves; ++h)
#pragma unroll
          for (int i = 0; i < S::kFoldAcc; ++i)
            total[h][i] = chunk == 0 ? acc[h][i] : __fadd_rn(total[h][i], acc[h][i]);
      }
      ++chunk;
      chunk_stages_left = chunk_stages<kTokens, kUnitRows>(unit);
      chunk_opens = true;
    }
    if (unit_ends) {
      // Done already (a unit's end is a chunk's), but ptxas does not see it: without this wait
      // it finds the two halves' accumulators read while their wgmmas may run, and serializes
      // every wgmma of the kernel (warning C7514).
      wgmma_wait<0>();
      if (unit.splits > 1) {
        __threadfence();
        __syncthreads();
        if (threadIdx.x == 0)
          last_unit_of_tile = atomicAdd(p.counters + unit.tile, 1u) == unsigned(unit.splits - 1);
        __syncthreads();
        if (last_unit_of_tile) {
          __threadfence();
          fold_partials<kTokens, kUnitRows>(p, unit, total);
          store_rows(p, work, unit, total);
        }
      } else if (unit.chunks > 1) {
        store_rows(p, work, unit, total);
      } else {
        store_rows(p, work, unit, acc);
      }
      unit_u += gridDim.x;
      unit = next_unit;
      kt = unit.kt_begin();
      chunk = unit.first_chunk;
      chunk_stages_left = chunk_stages<kTokens, kUnitRows>(unit);
    } else {
      kt += S::kSubTiles;
    }
    slot = next_slot;
  }
  wgmma_wait<0>();
  cp_async_wait<0>();
}

// Device-planned: the plan kernel's work list, in the workspace.
template <int kTokens, int kUnitRows, bool kPrepacked, bool kFragments = false, bool kTail = false>
__global__ void __launch_bounds__(Shape<kTokens, kUnitRows>::kThreads,
                                  Shape<kTokens, kUnitRows>::kMinCtasPerSm)
    decode_kernel(const __grid_constant__ DecodeParams p) {
#if defined(__CUDA_ARCH__) && (__CUDA_ARCH__ == 900) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
  using S = Shape<kTokens, kUnitRows>;
  extern __shared__ std::uint8_t smem_raw[];
  // Launched as a programmatic dependent of the plan kernel: wait here for its writes.
  asm volatile("griddepcontrol.wait;\n" ::: "memory");
  const int segments = p.totals->segments, units = p.totals->units;
  if (static_cast<int>(blockIdx.x) >= units) return;

  const uint32_t base = stage_base(smem_raw);
  std::uint8_t* base_ptr = smem_raw + (base - smem_address(smem_raw));
  auto* unit_first = reinterpret_cast<std::int32_t*>(base_ptr + S::kUnitTableAt);
  const int cached = min(segments, p.max_segments);
  for (int i = threadIdx.x; i <= cached; i += S::kThreads) unit_first[i] = p.unit_first[i];
  __syncthreads();
  const DeviceWork work{p, unit_first, cached, units};

  __shared__ int segment_ring[S::kStages];
  LoadCursor<kTokens, kUnitRows> cursor;
  cursor.begin(p, work, segment_ring);
  for (int s = 0; s < S::kStages - 1; ++s) {
    cursor.template step<Parts::all>(p, work, base, base_ptr);
    cp_async_commit();
  }
  run_units<kTokens, kUnitRows, kPrepacked, kFragments, kTail>(p, work, cursor, base, base_ptr);
#elif defined(__CUDA_ARCH__)
  __trap();  // built for a target without wgmma: fail loudly instead of leaving `out` unwritten
#endif
}

// Host-planned (HostWork): the CTA finds its units in its parameters and copies the first stages'
// weights and scales while the staging kernel still runs; their activations after its writes.
template <int kTokens, int kUnitRows, bool kPrepacked, bool kFragments = false, bool kTail = false>
__global__ void __launch_bounds__(Shape<kTokens, kUnitRows>::kThreads,
                                  Shape<kTokens, kUnitRows>::kMinCtasPerSm)
    decode_kernel_host(const __grid_constant__ DecodeParams p, const __grid_constant__ HostWork w) {
#if defined(__CUDA_ARCH__) && (__CUDA_ARCH__ == 900) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
  using S = Shape<kTokens, kUnitRows>;
  extern __shared__ std::uint8_t smem_raw[];
  if (static_cast<int>(blockIdx.x) >= w.units) return;  // none: the grid is min(units, CTAs)
  const uint32_t base = stage_base(smem_raw);
  std::uint8_t* base_ptr = smem_raw + (base - smem_address(smem_raw));
  // The unit prefix and the counts into shared memory first, 16 bytes a thread, where the
  // device-planned kernel keeps them too. Read from the parameters, the counts live in uniform
  // registers through the main loop, and the wgmma descriptors' uniform registers spill into
  // moves: 14 more instructions in three sub-tiles, 3.5 % on DeepSeek-V3 gate_up at T = 8.
  auto* unit_first = reinterpret_cast<std::int32_t*>(base_ptr + S::kUnitTableAt);
  if (threadIdx.x < kHostPrefixBytes / 16)
    reinterpret_cast<int4*>(unit_first)[threadIdx.x] =
        reinterpret_cast<const int4*>(w.unit_first)[threadIdx.x];
  __syncthreads();
  constexpr int kCounts = offsetof(HostWork, segments) / 4;
  const HostPlannedWork work{w, unit_first, unit_first[kCounts], unit_first[kCounts + 1]};

  __shared__ int segment_ring[S::kStages];
  LoadCursor<kTokens, kUnitRows> cursor;
  cursor.begin(p, work, segment_ring);
  const LoadCursor<kTokens, kUnitRows> first = cursor;
  for (int s = 0; s < S::kStages - 1; ++s)
    cursor.template step<Parts::weights>(p, work, base, base_ptr);
  // Launched as a programmatic dependent of the staging kernel: its activations from here on.
  asm volatile("griddepcontrol.wait;\n" ::: "memory");
  cursor = first;
  for (int s = 0; s < S::kStages - 1; ++s) {
    cursor.template step<Parts::activations>(p, work, base, base_ptr);
    cp_async_commit();  // the first group holds every early weight copy too
  }
  run_units<kTokens, kUnitRows, kPrepacked, kFragments, kTail>(p, work, cursor, base, base_ptr);
#elif defined(__CUDA_ARCH__)
  __trap();
#endif
}

}  // namespace metrale::cuda::sm90::decode
