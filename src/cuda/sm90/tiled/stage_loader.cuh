// The tiled family's shapes and its stage copies (sm_90a): how a tile's stages are laid out in
// shared memory (KernelShape), and the cp.async copies that fill one (StageLoader), for the
// CTA-synchronised kernel (tiled_kernel.cuh) and the warp-specialised one's producer
// (ws_kernel.cuh).
#pragma once

#include <cstddef>
#include <cstdint>

#include "cuda/sm90/primitives.cuh"
#include "cuda/sm90/tiled/tiled_locate.cuh"
#include "cuda/sm90/tiled/tiled_params.hpp"
#include "format/layouts.hpp"

namespace metrale::cuda::sm90 {

constexpr int kSfbChunkBytes = static_cast<int>(format::kSfbTileBytes);

template <class Config, bool kNvfp4>
struct KernelShape {
  static constexpr int kWarpgroups = Config::weight_rows / 64;
  static constexpr int kThreads = kWarpgroups * 128;
  static constexpr int kActBytes = Config::tokens * kSwizzleRowBytes;
  static constexpr int kWeightBytes =
      kNvfp4 ? Config::weight_rows * (kBlockK / 2) : Config::weight_rows * kSwizzleRowBytes;
  static constexpr int kScaleBytes = kNvfp4 ? kSfbChunkBytes : 0;
  static constexpr int kStageBytes =
      (kActBytes + kWeightBytes + kScaleBytes + kSwizzleAtomBytes - 1) / kSwizzleAtomBytes *
      kSwizzleAtomBytes;
  static constexpr int kSmemBytes = Config::stages * kStageBytes + kSwizzleAtomBytes;

  static_assert(Config::weight_rows == 64 || Config::weight_rows == 128,
                "weight_rows: one or two consumer warpgroups of 64 rows");
  static_assert(Config::tokens % 8 == 0 && Config::tokens <= 256, "tokens: wgmma N in 8..256");
  static_assert(Config::stages >= 3, "stages: one stage in the wgmmas, one landing, one loading");
  static_assert(4 * Config::weight_rows <= kSfbChunkBytes,
                "a [K/16, N] scale stage must fit the SFB-sized scale slot");
  static_assert(kActBytes % kSwizzleAtomBytes == 0, "weight tile must stay 1024-aligned");
  static_assert(kSmemBytes <= 227 * 1024, "shared memory per CTA exceeds sm_90's 227 KB");
};

// Step 3a. The cp.async copies of one k-tile. Each thread's share of a tile is the same for
// every k-tile, so its source pointers and shared offsets are computed once per CTA and a stage
// costs a handful of instructions per copy. Chunks with nothing to copy (a token row past the
// expert's end, a weight row past N) are skipped: the stages were zeroed at the start. Columns
// past K are zero-filled, so a partial last k-tile runs all four k16 steps on zeros (SFB scale
// padding is zero by the layout's contract; [K/16, N] scales past K are zero-filled too).
// Threads 0 .. kThreads - 1 share the copies (the whole CTA, or a warp-specialised kernel's
// producer warpgroup). kLeanRows: the pieces of a thread share one shared-memory offset and
// column (each is row tid/8 + i x kRowStep), and each keeps only its source pointer, advanced
// by every load, and a presence bit (a producer warpgroup holds 16 of them at 256 tokens).
// Measured: reading the rows from shared memory at each stage instead made the producer, not
// the tensor core, the limit (each load waited behind the previous copy: the copies are
// "memory"-ordered asm). A persistent kernel reuses its stages from tile to tile, so lean pieces
// with no source are copied as zeros (cp.async's ignore-src) rather than skipped.
template <class Config, bool kNvfp4, int kThreads = KernelShape<Config, kNvfp4>::kThreads,
          bool kLeanRows = false>
struct StageLoader {
  using Shape = KernelShape<Config, kNvfp4>;
  static constexpr int kActChunks = Config::tokens * 8;
  static constexpr int kActPerThread = (kActChunks + kThreads - 1) / kThreads;
  static constexpr int kActArrays = kLeanRows ? 1 : kActPerThread;  // offsets and columns kept
  // Lean: piece i of a thread is row tid/8 + i x kRowStep, the same 16-byte column and swizzle.
  static constexpr int kRowStep = kThreads / 8;
  static_assert(!kLeanRows || (kRowStep % 8 == 0 && kActChunks % kThreads == 0),
                "lean rows keep one swizzle phase per thread and whole rounds of pieces");
  static constexpr int kWeightChunksPerRow = kNvfp4 ? 2 : 8;
  static constexpr int kWeightChunks = Config::weight_rows * kWeightChunksPerRow;
  static constexpr int kWeightPerThread = (kWeightChunks + kThreads - 1) / kThreads;
  static constexpr int kWeightStride = kNvfp4 ? kBlockK / 2 : kBlockK * 2;  // bytes per k-tile

  // Each piece's source at k-tile 0 (null: nothing to copy); lean: at the next k-tile to load,
  // absent rows pointing at row 0, their presence in pieces_present (bit i).
  const std::uint8_t* act_src[kActPerThread];
  uint32_t act_dst[kActArrays];
  int act_col[kActArrays];  // first K index of the chunk
  uint32_t pieces_present = 0;
  const std::uint8_t* weight_src[kWeightPerThread];
  uint32_t weight_dst[kWeightPerThread];
  int weight_col[kWeightPerThread];  // first byte of the chunk within a weight row
  int weight_row_bytes;
  const std::uint8_t* scale_src = nullptr;  // this thread's scale chunk at k-tile 0
  uint32_t scale_dst = 0;
  size_t scale_stride = 0;                      // bytes per k-tile
  int scale_block = 0;                          // first K/16 block of the chunk ([K/16, N] layout)
  const std::uint8_t* expert_scales = nullptr;  // the expert's scales, for the bytewise path
  int n0 = 0;                                   // first output channel of the CTA

  __device__ StageLoader(const GroupedParams& p, const ExpertEntry& entry, const int* src_rows,
                         int first_channel)
      : expert_scales(entry.scale), n0(first_channel) {
    const int tid = threadIdx.x;
    if constexpr (kLeanRows) {
#pragma unroll
      for (int i = 0; i < kActPerThread; ++i) {
        const int id = src_rows[tid / 8 + i * kRowStep];
        act_src[i] = reinterpret_cast<const std::uint8_t*>(
            p.a + static_cast<size_t>(max(id, 0)) * p.k + tid % 8 * 8);
        pieces_present |= static_cast<uint32_t>(id >= 0) << i;
      }
      act_dst[0] = swizzled_offset(tid / 8, tid % 8);
      act_col[0] = tid % 8 * 8;
    }
#pragma unroll
    for (int i = 0; i < (kLeanRows ? 0 : kActPerThread); ++i) {
      const int idx = tid + i * kThreads, r = idx / 8, c = idx % 8;
      const int row = idx < kActChunks ? src_rows[r] : -1;
      act_src[i] =
          row >= 0
              ? reinterpret_cast<const std::uint8_t*>(p.a + static_cast<size_t>(row) * p.k) + c * 16
              : nullptr;
      act_dst[i] = swizzled_offset(r, c);
      act_col[i] = c * 8;
    }
    const auto* weight = static_cast<const std::uint8_t*>(entry.weight);
    weight_row_bytes = kNvfp4 ? p.k / 2 : p.k * 2;
#pragma unroll
    for (int i = 0; i < kWeightPerThread; ++i) {
      const int idx = tid + i * kThreads;
      const int w = idx / kWeightChunksPerRow, c = idx % kWeightChunksPerRow;
      const bool has = idx < kWeightChunks && n0 + w < p.n;
      weight_src[i] =
          has ? weight + static_cast<size_t>(n0 + w) * weight_row_bytes + c * 16 : nullptr;
      weight_dst[i] =
          Shape::kActBytes + (kNvfp4 ? w * (kBlockK / 2) + c * 16 : swizzled_offset(w, c));
      weight_col[i] = c * 16;
    }
    if constexpr (kNvfp4) init_scales(p, expert_scales);
  }

  __device__ void init_scales(const GroupedParams& p, const std::uint8_t* scale) {
    const int tid = threadIdx.x;
    const uint32_t slot = Shape::kActBytes + Shape::kWeightBytes;
    if (p.scale_sfb) {
      // One 128-row x 4-block tile, contiguous in the SFB layout (rows padded to 128). Byte
      // (n % 32) * 16 + ((n / 32) % 4) * 4 + b % 4 holds row n: a 64-row CTA copies only the
      // half of each 16-byte group that its rows' (n / 32) % 4 selects.
      const int half = Config::weight_rows == 128 ? 0 : (n0 % 128) / 64 * 8;
      if (tid < kSfbChunkBytes / 16) {
        scale_src = scale + format::sfb_tile_offset(n0, 0, p.k) + tid * 16 + half;
        scale_dst = slot + tid * 16 + half;
        scale_stride = kSfbChunkBytes;
      }
    } else if (p.scale_vec16) {
      // [K/16, N]: 4 block rows of weight_rows scales, 16 at a time.
      constexpr int kChunksPerRow = Config::weight_rows / 16;
      const int i = tid / kChunksPerRow, c = tid % kChunksPerRow;
      if (tid < 4 * kChunksPerRow && n0 + c * 16 < p.n) {
        scale_src = scale + static_cast<size_t>(i) * p.n + n0 + c * 16;
        scale_dst = slot + i * Config::weight_rows + c * 16;
        scale_stride = static_cast<size_t>(4) * p.n;
        scale_block = i;
      }
    }
  }

  // Lean loaders load a tile's k-tiles in order from 0: each copy advances its piece's source in
  // place, so no copy waits for an earlier one to free the register that held its address (the
  // copies read their operands late: a shared address register stalled each copy, docs/perf.md,
  // "fifteenth session", item 5).
  __device__ __forceinline__ void load(const GroupedParams& p, int kt, uint32_t stage,
                                       std::uint8_t* stage_ptr) {
    if constexpr (kLeanRows) {
      const uint32_t present = act_col[0] + kt * kBlockK < p.k ? pieces_present : 0u;
#pragma unroll
      for (int i = 0; i < kActPerThread; ++i) {
        cp_async_16_if(stage + act_dst[0] + i * kRowStep * kSwizzleRowBytes, act_src[i],
                       present & (1u << i));
        act_src[i] += kBlockK * 2;
      }
    } else {
#pragma unroll
      for (int i = 0; i < kActPerThread; ++i)
        if (act_src[i])
          cp_async_16(stage + act_dst[i], act_src[i] + kt * kBlockK * 2,
                      act_col[i] + kt * kBlockK < p.k);
    }
    // A bf16 weight row is 128 bytes a k-tile: each copy also asks L2 for the 256 bytes around
    // it, so the row's next k-tile is an L2 hit (alone, without tiled_params.hpp's deeper stages:
    // 0.95-0.99x the dense GEMM's time at M = 48-64, level elsewhere; docs/perf.md, forty-second
    // session).
#pragma unroll
    for (int i = 0; i < kWeightPerThread; ++i)
      if (weight_src[i])
        cp_async_zfill<16, !kNvfp4>(stage + weight_dst[i], weight_src[i] + kt * kWeightStride,
                                    weight_col[i] + kt * kWeightStride < weight_row_bytes);
    if constexpr (kNvfp4) {
      if (p.scale_sfb) {
        if (scale_src) {
          if constexpr (Config::weight_rows == 128)
            cp_async_16(stage + scale_dst, scale_src + kt * scale_stride, true);
          else
            cp_async_8(stage + scale_dst, scale_src + kt * scale_stride);
        }
      } else if (p.scale_vec16) {
        if (scale_src)
          cp_async_16(stage + scale_dst, scale_src + kt * scale_stride,
                      kt * 4 + scale_block < p.k / 16);
      } else {
        load_scales_bytewise(p, kt, stage_ptr + Shape::kActBytes + Shape::kWeightBytes);
      }
    }
  }

  // [K/16, N] scales whose rows are not 16-byte aligned (N % 16 != 0): plain loads.
  __device__ void load_scales_bytewise(const GroupedParams& p, int kt, std::uint8_t* slot) const {
    for (int idx = threadIdx.x; idx < 4 * Config::weight_rows; idx += kThreads) {
      const int i = idx / Config::weight_rows, w = idx % Config::weight_rows, b = kt * 4 + i;
      const bool valid = b < p.k / 16 && n0 + w < p.n;
      slot[idx] = valid ? __ldg(expert_scales + static_cast<size_t>(b) * p.n + n0 + w) : 0;
    }
  }
};

}  // namespace metrale::cuda::sm90
