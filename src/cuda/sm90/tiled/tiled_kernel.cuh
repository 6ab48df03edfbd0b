// The tiled family's sm_90a GEMM kernel: dense bf16, and NVFP4 with many rows per expert (the
// decode family, sm90/decode, streams the few-row case), grouped with an optional row gather.
//
//   out[p][i, n] = sum_k a[row(i), k] * W[p][e(i)][n, k]        (fp32 accumulate, bf16 out)
//
// Orientation ("swap AB"): the weight rows are the wgmma M dimension (64 per warpgroup) and the
// tokens of one expert are the wgmma N dimension (8..128), so a decode step with one token per
// expert still fills the tensor core's M side with weights.
//
// Data path, per CTA (one expert's row tile x weight_rows output channels x one projection):
//  1. locate (tiled_locate.cuh): a block-wide scan over the expert offsets (device memory: the
//     caller's, or host offsets staged into the workspace) maps the CTA's row tile (raster_tile's
//     order) to (expert, row range); experts whose rows fall outside [min_rows, max_rows] are
//     another family's and get no tiles.
//  2. gather (tiled_locate.cuh): the tile's source rows (token_ids[i], or i) go to shared
//     memory; negative ids and, when the caller gave a_rows (> 0), ids past it read as zeros. The
//     seed-shaped fused call cannot pass a_rows: there the ids are trusted.
//  3. mainloop: a cp.async pipeline of `stages` k-tiles (64 values of K each; the copies are
//     stage_loader.cuh's; a dense bf16 GEMM's are TMA boxes, tma_stages.cuh, one thread asking
//     for a stage and mbarriers in place of the cp.async groups and the CTA barrier of every
//     k-tile: 0.89-0.97x the time at M = 512, 0.88-1.03x past it, an H100, docs/perf.md,
//     forty-third session). Activations land in a 128-byte-swizzled K-major tile read by wgmma
//     through a descriptor. NVFP4 weights land as packed bytes plus their block scales; each
//     thread decodes its A fragment (e2m1 x e4m3 in bf16, exact) into registers and issues
//     wgmma with A from registers. bf16 weights land in a swizzled tile and wgmma reads both
//     operands from shared memory. Software-pipelined: while the wgmmas of k-tile kt run, the
//     CTA waits for kt + 1, refills kt - 1's slot and decodes kt + 1. Every tile accumulates K
//     in the same order (k16 steps, ascending), so the products do not depend on the tile
//     chosen; a bf16 tile may cut K into ranges (p.splits), the CTAs of one cluster, folded in
//     range order (fold_cluster).
//  4. epilogue (tiled_epilogue.cuh): fp32 accumulators x scale_2 (fp32) -> bf16, stored to the
//     group rows, through shared memory where the rows take 16-byte stores.
//
// Speed: docs/perf.md records each change to this kernel with its prediction and measurement.
#pragma once

#include <cuda_bf16.h>

#include <cstdint>

#include "cuda/sm90/decode/fp4_bits.cuh"
#include "cuda/sm90/primitives.cuh"
#include "cuda/sm90/tiled/bit_decode.cuh"
#include "cuda/sm90/tiled/lut_decode.cuh"
#include "cuda/sm90/tiled/stage_loader.cuh"
#include "cuda/sm90/tiled/tiled_epilogue.cuh"
#include "cuda/sm90/tiled/tiled_locate.cuh"
#include "cuda/sm90/tiled/tiled_params.hpp"
#include "cuda/sm90/tiled/tma_stages.cuh"
#include "cuda/sm90/wgmma_ops.cuh"
#include "format/fragment_order.hpp"
#include "format/layouts.hpp"

namespace metrale::cuda::sm90 {

// The first of a thread's two local weight rows (r and r + 8): warps of a warpgroup own 16 rows
// each. `thread`: the caller's index among the consumer warpgroups.
__device__ __forceinline__ int fragment_row(unsigned thread) {
  return static_cast<int>((thread / 32) * 16 + thread % 32 / 4);
}

// Where a stage's scale slot keeps the block scales of a thread's two rows (byte offsets): fixed
// for a tile, so found once a tile rather than once a stage (the SFB index is half a dozen
// operations a row).
struct ScaleRows {
  int first, second;
};
template <class Config>
__device__ __forceinline__ ScaleRows scale_rows(const GroupedParams& p, int n0, unsigned thread) {
  const int r = fragment_row(thread);
  if (p.scale_sfb)
    return ScaleRows{static_cast<int>(format::sfb_row_in_tile(n0 % 128 + r)),
                     static_cast<int>(format::sfb_row_in_tile(n0 % 128 + r + 8))};
  return ScaleRows{r, r + 8};
}

// The four block scales (one per k16 step of the stage) of the row whose scales start at byte
// `at` of the slot (scale_rows), byte s = step s.
template <class Config>
__device__ __forceinline__ uint32_t stage_scales(const GroupedParams& p, const std::uint8_t* scales,
                                                 int at) {
  if (p.scale_sfb) return *reinterpret_cast<const uint32_t*>(scales + at);
  return scales[at] | (scales[Config::weight_rows + at] << 8) |
         (scales[2 * Config::weight_rows + at] << 16) |
         (scales[3 * Config::weight_rows + at] << 24);
}

// The fp32 factor of the epilogue: scale_2, x 2^7 where the decode leaves the weights 2^-7 small.
template <bool kPrepacked>
__device__ __forceinline__ float weight_scale_2(const ExpertEntry& entry) {
  return kPrepacked ? entry.scale_2 * decode::kEpilogueFactor : entry.scale_2;
}

// Whether stage kt (NVFP4 weights: one K range, so k-tile kt) of weights in the fragment order
// is a row's K % 64 tail, which keeps the prepacked halves' layout (format/fragment_order.hpp).
template <bool kFragments>
__device__ __forceinline__ bool halves_tail_stage(const GroupedParams& p, int kt) {
  return kFragments && format::fragment_tail(p.k, kt);
}

// Step 3b (NVFP4). Decodes this thread's A fragments for the four k16 steps of one stage: the
// codes of rows r0 and r0 + 8, e2m1 -> bf16 by table, times the block scale (exact in bf16).
// Each thread converts the two block scales of each step itself (measured: a shared conversion
// one stage ahead was 5% slower, docs/perf.md), or, on Config::quad_scales tiles, one step's of
// the four, shared in its quad by shuffles (quad_scale_pairs).
// `thread`: the caller's index among the consumer warpgroups (threadIdx.x when all of the CTA
// consumes).
// kPrepacked: the weights in format/prepack.hpp's layout (decode_prepacked_stage); kFragments:
// prepacked in the fragment order (decode_fragment_stage) but for `halves_tail`, the stage of a
// row's K % 64 tail (halves_tail_stage).
template <class Config, bool kPrepacked, bool kFragments = false>
__device__ __forceinline__ void decode_stage(const GroupedParams& p, const std::uint8_t* stage_ptr,
                                             const ScaleRows& scale_at, uint32_t (&frag)[4][4],
                                             unsigned thread = threadIdx.x,
                                             bool halves_tail = false) {
  using Shape = KernelShape<Config, true>;
  const int t = thread % 4, r0 = fragment_row(thread);
  const std::uint8_t* weights = stage_ptr + Shape::kActBytes;
  // The fragment order: 8 bytes a row; a row's K % 64 tail keeps the halves' layout
  // (format/fragment_order.hpp), read below.
  if constexpr (kFragments) {
    if (!halves_tail) {
      const std::uint8_t* scales = weights + Shape::kWeightBytes;
      decode_fragment_stage<Config::quad_scales>(
          *reinterpret_cast<const uint2*>(weights + r0 * 32 + 8 * t),
          *reinterpret_cast<const uint2*>(weights + (r0 + 8) * 32 + 8 * t),
          stage_scales<Config>(p, scales, scale_at.first),
          stage_scales<Config>(p, scales, scale_at.second), t, frag);
      return;
    }
  }
  uint32_t words0[8], words1[8];
  *reinterpret_cast<uint4*>(&words0[0]) = *reinterpret_cast<const uint4*>(weights + r0 * 32);
  *reinterpret_cast<uint4*>(&words0[4]) = *reinterpret_cast<const uint4*>(weights + r0 * 32 + 16);
  *reinterpret_cast<uint4*>(&words1[0]) = *reinterpret_cast<const uint4*>(weights + (r0 + 8) * 32);
  *reinterpret_cast<uint4*>(&words1[4]) =
      *reinterpret_cast<const uint4*>(weights + (r0 + 8) * 32 + 16);
  const std::uint8_t* scales = weights + Shape::kWeightBytes;
  const uint32_t scales0 = stage_scales<Config>(p, scales, scale_at.first);
  const uint32_t scales1 = stage_scales<Config>(p, scales, scale_at.second);
  if constexpr (kPrepacked) {
    decode_prepacked_stage<Config::quad_scales>(words0, words1, scales0, scales1, t, frag);
    return;
  }
  const uint32_t pick = t | ((t + 4) << 4);
  uint32_t quad[4];
  if constexpr (Config::quad_scales)
    quad_scale_pairs(
        scales0, scales1, t, [](uint32_t b) { return e4m3x2_to_bf16x2(b); }, quad);
#pragma unroll
  for (int s = 0; s < 4; ++s) {
    // Bytes t and t + 4 of the step's 8 code bytes hold k = 2t, 2t+1 and 2t+8, 2t+9.
    const uint32_t lo = __byte_perm(words0[2 * s], words1[2 * s], pick);
    const uint32_t hi = __byte_perm(words0[2 * s + 1], words1[2 * s + 1], pick);
    decode_e2m1x8(__byte_perm(lo, hi, 0x5410), frag[s]);
    const uint32_t pair =
        Config::quad_scales ? quad[s] : e4m3x2_to_bf16x2(step_scale_bytes(scales0, scales1, s));
    const uint32_t scale_r0 = __byte_perm(pair, 0, 0x1010), scale_r1 = __byte_perm(pair, 0, 0x3232);
    frag[s][0] = bf16x2_mul(frag[s][0], scale_r0);
    frag[s][1] = bf16x2_mul(frag[s][1], scale_r1);
    frag[s][2] = bf16x2_mul(frag[s][2], scale_r0);
    frag[s][3] = bf16x2_mul(frag[s][3], scale_r1);
  }
}

// Step 3c. Issues one stage's k16 wgmmas into the accumulators: A from registers (NVFP4) or from
// a bf16 weight tile `weights_at` bytes past `act` (this warpgroup's 64 rows: stage_weights_at,
// or a decoded tile of dws_kernel.cuh); B is the stage's activation tile, Config::chunk tokens
// per wgmma, the first kChunks of them. The chunks' accumulators, side by side, are the m64nNk16
// layout of the whole tile. One straight run of wgmmas per chunk count: with a runtime test
// between the chunks the compiler split a stage's wgmmas into batches and waited on its own
// stage's first batch before issuing the next (docs/perf.md, "2026-12-04").
template <class Config, bool kNvfp4, int kChunks>
__device__ __forceinline__ void issue_chunks(uint32_t act, const uint32_t (&frag)[4][4],
                                             float (&acc)[Config::tokens / 2],
                                             uint32_t weights_at) {
  constexpr int kChunk = Config::chunk;
  // One descriptor a stage; each wgmma's is a 32-bit add to it (descriptor_plus), where one built
  // from its address took four operations (mask, shift, or, add).
  const uint64_t stage = sw128_descriptor(act);
  wgmma_fence();
#pragma unroll
  for (int c = 0; c < kChunks; ++c) {
    float(&part)[kChunk / 2] = *reinterpret_cast<float(*)[kChunk / 2]>(&acc[c * kChunk / 2]);
    if constexpr (kNvfp4 && Config::step_batch) {
      // The four k16 steps in one statement: their descriptors added in PTX (rs4).
      Wgmma<kChunk>::rs4(part, frag, descriptor_plus(stage, c * kChunk * kSwizzleRowBytes), 1);
    } else {
#pragma unroll
      for (int s = 0; s < 4; ++s) {
        const uint64_t b = descriptor_plus(stage, c * kChunk * kSwizzleRowBytes + s * 32);
        if constexpr (kNvfp4) {
          Wgmma<kChunk>::rs(part, frag[s], b, 1);
        } else {
          Wgmma<kChunk>::ss(part, descriptor_plus(stage, weights_at + s * 32), b, 1);
        }
      }
    }
  }
  wgmma_commit();
}

// The chunks covering the tile's rows (`chunks`, at least one): a partial tile skips the
// chunks past its rows. Tiles have one or two chunks.
template <class Config, bool kNvfp4>
__device__ __forceinline__ void issue_stage(uint32_t act, const uint32_t (&frag)[4][4],
                                            float (&acc)[Config::tokens / 2], uint32_t weights_at,
                                            int chunks) {
  constexpr int kAll = Config::tokens / Config::chunk;
  static_assert(kAll == 1 || kAll == 2, "a tile is one or two chunks");
  if constexpr (kAll == 2)
    if (chunks < 2) return issue_chunks<Config, kNvfp4, 1>(act, frag, acc, weights_at);
  issue_chunks<Config, kNvfp4, kAll>(act, frag, acc, weights_at);
}

// The bytes from a stage's start to this warpgroup's 64 rows of its bf16 weight tile (unused for
// NVFP4 weights, decoded into registers).
template <class Config, bool kNvfp4>
__device__ __forceinline__ uint32_t stage_weights_at(unsigned thread) {
  return KernelShape<Config, kNvfp4>::kActBytes + (thread / 128) * 64 * kSwizzleRowBytes;
}

// Zero every stage once: rows the loader skips must read as zeros.
template <int kThreads>
__device__ __forceinline__ void zero_stages(std::uint8_t* base, int bytes) {
  auto* words = reinterpret_cast<uint4*>(base);
  for (int i = threadIdx.x; i < bytes / 16; i += kThreads) words[i] = make_uint4(0, 0, 0, 0);
}

// A tile's accumulators at zero, pinned there (fence_operand) before its first wgmma.
template <int kAcc>
__device__ __forceinline__ void zero_accumulators(float (&acc)[kAcc]) {
#pragma unroll
  for (int i = 0; i < kAcc; ++i) {
    acc[i] = 0.f;
    fence_operand(acc[i]);
  }
}

// After the last wgmma_wait<0>: the fragments and accumulators are no longer the wgmmas'.
template <int kAcc>
__device__ __forceinline__ void release_operands(uint32_t (&frag)[2][4][4], float (&acc)[kAcc]) {
#pragma unroll
  for (int b = 0; b < 2; ++b)
#pragma unroll
    for (int s = 0; s < 4; ++s)
#pragma unroll
      for (int j = 0; j < 4; ++j) fence_operand(frag[b][s][j]);
#pragma unroll
  for (int i = 0; i < kAcc; ++i) fence_operand(acc[i]);
}

// Runs step(kt, current, other) over the k-tiles, the two fragment buffers alternating (the
// loop unrolled by two keeps their indices compile-time), then waits for the last wgmmas.
template <int kAcc, class Step>
__device__ __forceinline__ void run_stages(int k_tiles, uint32_t (&frag)[2][4][4],
                                           float (&acc)[kAcc], Step&& step) {
  for (int kt = 0; kt < k_tiles; kt += 2) {
    step(kt, frag[0], frag[1]);
    if (kt + 1 < k_tiles) step(kt + 1, frag[1], frag[0]);
  }
  wgmma_wait<0>();
  release_operands(frag, acc);
}

// kTma: a dense bf16 GEMM (one expert, no gather) whose stages are copied by TMA
// (tma_stages.cuh) instead of the threads' cp.async copies.
template <class Config, bool kNvfp4, bool kPrepacked, bool kFragments = false, bool kTma = false>
__global__ void __launch_bounds__(KernelShape<Config, kNvfp4>::kThreads)
    grouped_gemm_kernel(const __grid_constant__ GroupedParams p) {
#if defined(__CUDA_ARCH__) && (__CUDA_ARCH__ == 900) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
  using Shape = KernelShape<Config, kNvfp4>;
  static_assert(!kTma || !kNvfp4, "TMA copies the bf16 operands only");
  extern __shared__ std::uint8_t smem_raw[];
  __shared__ int src_rows[kTma ? 1 : Config::tokens];
  __shared__ uint64_t tma_bars[2][kTma ? Config::stages : 1];  // TmaStages' full and empty

  // 1. locate
  // The grid is channel tiles x row tiles, launched in raster_tile's order, x projections x K
  // ranges.
  const TileCoord at =
      raster_tile(blockIdx.y * gridDim.x + blockIdx.x, gridDim.x, gridDim.y, p.band_rows);
  const int projection = blockIdx.z / p.splits, split = blockIdx.z % p.splits;
  int expert, row_begin, row_end;
  if (!locate_row_tile<Shape::kThreads, Config::tokens>(p, at.row, expert, row_begin, row_end))
    return;
  const ExpertEntry entry = expert_entry(p, projection, expert);
  const int n0 = at.channel * Config::weight_rows;

  // 2. gather (TMA copies the dense rows as they lie)
  if constexpr (!kTma) {
    gather_rows<Config::tokens, Shape::kThreads>(p, row_begin, row_end, src_rows);
    __syncthreads();
  }

  // 3. mainloop
  const uint32_t base = (smem_address(smem_raw) + kSwizzleAtomBytes - 1) & ~(kSwizzleAtomBytes - 1);
  std::uint8_t* base_ptr = smem_raw + (base - smem_address(smem_raw));
  const int all_k_tiles = (p.k + kBlockK - 1) / kBlockK;
  const int kt_first = split * all_k_tiles / p.splits;  // this CTA's K range, in k-tiles
  const int k_tiles = (split + 1) * all_k_tiles / p.splits - kt_first;
  // The stages' copies: the threads' cp.async (StageLoader, on zeroed stages) or one thread's
  // TMA boxes (TmaStages).
  auto loader = [&] {
    if constexpr (kTma) {
      return TmaStages<Config>{tma_bars[0], tma_bars[1], base_ptr, kt_first, row_begin, n0};
    } else {
      zero_stages<Shape::kThreads>(base_ptr, Config::stages * Shape::kStageBytes);
      return StageLoader<Config, kNvfp4>(p, entry, src_rows, n0);
    }
  }();
  if constexpr (kTma)
    if (threadIdx.x == 0) loader.init();
  __syncthreads();
  float acc[Config::tokens / 2];
  zero_accumulators(acc);
  for (int s = 0; s < Config::stages - 1; ++s) {
    if constexpr (kTma) {
      if (threadIdx.x == 0 && s < k_tiles) loader.load(p, s);
    } else {
      if (s < k_tiles)
        loader.load(p, kt_first + s, base + s * Shape::kStageBytes,
                    base_ptr + s * Shape::kStageBytes);
      cp_async_commit();
    }
  }
  // Software pipeline: while the wgmmas of stage kt run, the CTA waits for stage kt + 1, refills
  // the slot stage kt - 1 used, and decodes stage kt + 1 into the other fragment buffer. The
  // buffers alternate (run_stages).
  uint32_t frag[2][4][4];
  if constexpr (kTma) {
    if (k_tiles > 0) loader.wait_full(0);  // (a K split's range may be empty)
  } else {
    cp_async_wait<Config::stages - 2>();
    // cp.async wrote through the generic proxy; wgmma reads through the async proxy.
    asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
    __syncthreads();
  }
  const ScaleRows scale_at = scale_rows<Config>(p, n0, threadIdx.x);
  if constexpr (kNvfp4)
    decode_stage<Config, kPrepacked, kFragments>(p, base_ptr, scale_at, frag[0], threadIdx.x,
                                                 halves_tail_stage<kFragments>(p, 0));
  const int chunks = row_chunks(row_end - row_begin, Config::chunk);
  auto step = [&](int kt, uint32_t(&current)[4][4], uint32_t(&other)[4][4]) {
    issue_stage<Config, kNvfp4>(base + kt % Config::stages * Shape::kStageBytes, current, acc,
                                stage_weights_at<Config, kNvfp4>(threadIdx.x), chunks);
    wgmma_wait<1>();  // stage kt - 1 is done: its slot and `other` are free
#pragma unroll
    for (int s = 0; s < 4; ++s)
#pragma unroll
      for (int j = 0; j < 4; ++j) fence_operand(other[s][j]);
    if constexpr (kTma) {
      // No CTA barrier: the warpgroup frees stage kt - 1's slot, thread 0 refills it once every
      // warpgroup has, and each warpgroup waits only for the stage it reads next.
      if (kt > 0) loader.release(kt - 1);
      if (threadIdx.x == 0 && kt + Config::stages - 1 < k_tiles)
        loader.load(p, kt + Config::stages - 1);
      if (kt + 1 < k_tiles) loader.wait_full(kt + 1);
    } else {
      cp_async_wait<Config::stages - 3>();  // stage kt + 1 has landed
      asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
      __syncthreads();
      const int next = kt + Config::stages - 1;
      if (next < k_tiles) {
        const int slot = next % Config::stages;
        loader.load(p, kt_first + next, base + slot * Shape::kStageBytes,
                    base_ptr + slot * Shape::kStageBytes);
      }
      cp_async_commit();
    }
    if constexpr (kNvfp4)
      if (kt + 1 < k_tiles)
        decode_stage<Config, kPrepacked, kFragments>(
            p, base_ptr + (kt + 1) % Config::stages * Shape::kStageBytes, scale_at, other,
            threadIdx.x, halves_tail_stage<kFragments>(p, kt + 1));
  };
  run_stages(k_tiles, frag, acc, step);

  // 4. epilogue (the stages are free: the last wgmmas are done, no copy is in flight)
  static_assert(Config::tokens / 2 * Shape::kThreads * 4 <= Config::stages * Shape::kStageBytes,
                "a K range's sums fit in the stages");
  TileSlice slice{0, Config::tokens};
  if (p.splits > 1) {
    if constexpr (Config::cluster_fold) {
      slice = fold_cluster<Shape::kThreads>(acc, reinterpret_cast<float*>(base_ptr));
      row_end = min(row_end, row_begin + slice.end);
      if (row_begin + slice.first >= row_end) return;
    } else {
      const int tile = (projection * gridDim.y + blockIdx.y) * gridDim.x + blockIdx.x;
      if (!fold_splits<Shape::kThreads>(p, tile, split, acc)) return;
    }
  }
  const float scale_2 = kNvfp4 ? weight_scale_2<kPrepacked>(entry) : 1.0f;
  std::uint16_t* out = p.out[projection];
  if constexpr (StagedTile<Config>::kFits) {
    static_assert(StagedTile<Config>::kBytes <= Config::stages * Shape::kStageBytes,
                  "the staging tile fits in the stages");
    if (rows_take_16_bytes(p, out)) {
      store_tile_staged<Config>(
          p, out, scale_2, n0, row_begin, row_end, acc, base_ptr, threadIdx.x,
          [] { __syncthreads(); }, slice.first);
      return;
    }
  }
  store_tile<Config>(p, out, scale_2, n0, row_begin, row_end, acc, threadIdx.x, slice.first);
#elif defined(__CUDA_ARCH__)
  __trap();  // built for a target without wgmma: fail loudly instead of leaving `out` unwritten
#endif
}

}  // namespace metrale::cuda::sm90
