// What the quantizer's two quantize kernels share (quantize_lean.cu's, the default, and
// quantize.cu's earlier, proven one): the scratch the device passes back, the CTA tile and its
// parameters, the walk over the tiles and the tile's scale stores (the block scale's arithmetic
// is scale_table.hpp's block_scale_byte).
// Device code; the host reads PackScratch and fills QuantizeParams.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "cuda/cuda_backend.hpp"
#include "cuda/pack/quantize_block.hpp"
#include "cuda/pack/tile_shape.hpp"
#include "format/nvfp4_recipe.hpp"

namespace metrale::cuda {

// What the device passes back, zeroed before the first kernel.
struct PackScratch {
  unsigned long long first_bad_complement;  // ~(lowest non-finite flat index); 0: none
  std::uint32_t amax_magnitude;             // max bf16 magnitude bits (scan pass)
  std::uint32_t unused;
};
static_assert(sizeof(PackScratch) == kPackScratchBytes, "the workspace the quantizer asks for");

constexpr unsigned long long kNoIndex = ~0ull;

// The warp's lowest index into the scratch (one atomic per warp that found any).
__device__ __forceinline__ void publish_first_bad(unsigned long long index, PackScratch* scratch) {
#pragma unroll
  for (int offset = 16; offset > 0; offset /= 2)
    index = min(index, __shfl_xor_sync(0xFFFFFFFFu, index, offset));
  if (threadIdx.x % 32 == 0 && index != kNoIndex) atomicMax(&scratch->first_bad_complement, ~index);
}

__device__ __forceinline__ void load_words(const uint4& v, std::uint32_t* words) {
  words[0] = v.x, words[1] = v.y, words[2] = v.z, words[3] = v.w;
}

struct QuantizeParams {
  const bf16_bits* weight;  // [N, K]
  std::uint8_t* packed;     // [N, K/2]
  std::uint8_t* scale;      // [K/16, N]
  float* scale_2_out;       // written when the scan ran (computed form), else null
  PackScratch* scratch;
  std::int64_t n, k;
  std::int64_t row_tiles, col_tiles;
  bool scale_words;  // the scales leave 4 bytes at a time: N % 4 == 0 and `scale` 4-byte aligned
};

struct TileOrigin {
  std::int64_t row0, col0;
};

// Tiles run along K first, so neighbouring CTAs stream neighbouring bytes of the same rows, and
// from the end of the tensor back: the scan ended there, so that part is still in L2. A CTA walks
// every gridDim.x-th tile: one division when it starts, then a subtract and a compare a step (a
// 64-bit division is a ~70-instruction subroutine on the GPU). `Index` counts tiles: the proven
// kernel's 64 bits, or the lean kernel's 32 (fewer instructions a step; its launch checks that
// the tiles fit).
template <class Index>
struct BasicTileCursor {
  Index row_tile, col_tile;
  // gridDim.x tiles as (rows, columns), col_stride < col_tiles
  Index row_stride, col_stride;

  __device__ BasicTileCursor(const QuantizeParams& p, Index first) {
    const auto col_tiles = static_cast<Index>(p.col_tiles);
    const Index tile = static_cast<Index>(p.row_tiles * p.col_tiles) - 1 - first;
    row_tile = tile / col_tiles;
    col_tile = tile % col_tiles;
    row_stride = static_cast<Index>(gridDim.x) / col_tiles;
    col_stride = static_cast<Index>(gridDim.x) % col_tiles;
  }
  __device__ __forceinline__ void advance(const QuantizeParams& p) {
    row_tile -= row_stride;
    col_tile -= col_stride;
    if (col_tile < 0) {
      col_tile += static_cast<Index>(p.col_tiles);
      --row_tile;
    }
  }
  __device__ __forceinline__ TileOrigin origin() const {
    return {static_cast<std::int64_t>(row_tile) * kTileRows,
            static_cast<std::int64_t>(col_tile) * kTileCols};
  }
};
using TileCursor = BasicTileCursor<std::int64_t>;

// A tile's scales out: 16 runs of 32 consecutive n of [K/16, N], 4 bytes a thread where N and the
// pointer allow it (a run is then 8 threads; rows start at multiples of 32, so with N % 4 == 0 a
// word's first n inside the tensor means all four), else a byte a thread, a warp a run.
__device__ __forceinline__ void store_tile_scales(
    const QuantizeParams& p, TileOrigin t, const std::uint8_t (&scales)[kTileBlocks][kTileRows]) {
  const std::int64_t blocks = p.k / format::kBlockSize, first_block = t.col0 / format::kBlockSize;
  if (p.scale_words) {
    constexpr int kWordsPerRun = kTileRows / 4;
    const int i = threadIdx.x, block_in_tile = i / kWordsPerRun, r = 4 * (i % kWordsPerRun);
    const std::int64_t sn = t.row0 + r, sb = first_block + block_in_tile;
    if (i < kTileBlocks * kWordsPerRun && sn < p.n && sb < blocks)
      __stcs(reinterpret_cast<unsigned int*>(p.scale + sb * p.n + sn),
             *reinterpret_cast<const unsigned int*>(&scales[block_in_tile][r]));
    return;
  }
  for (int i = threadIdx.x; i < kTileBlocks * kTileRows; i += kQuantThreads) {
    const int block_in_tile = i / kTileRows, r = i % kTileRows;
    const std::int64_t sn = t.row0 + r, sb = first_block + block_in_tile;
    if (sn < p.n && sb < blocks) __stcs(p.scale + sb * p.n + sn, scales[block_in_tile][r]);
  }
}

// The lean quantize pass (quantize_lean.cu) on `stream`: the same bits as quantize.cu's kernel.
void quantize_lean(const QuantizeParams& p, cudaStream_t stream);

}  // namespace metrale::cuda
