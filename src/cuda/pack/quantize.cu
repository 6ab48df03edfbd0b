// metrale::cuda::pack_nvfp4: bf16 weight [N, K] -> packed e2m1 [N, K/2] (even k in the low
// nibble) + e4m3 block scales [K/16, N], the ModelOpt recipe of format/nvfp4_recipe.hpp, bit for
// bit the CPU reference: the block scale through the recipe's own functions, the codes through
// its proven-equal division-free form (e2m1_thresholds.hpp). No fast-math anywhere.
// With scale_2_out set, three launches on the caller's stream and no host synchronisation:
//   1. amax: max |x| over the tensor (NaN ignored), atomicMax on the fp32 bits of |x|, which
//      order like the values for non-negative floats; accumulated in *scale_2_out itself
//   2. finalize: *scale_2_out = scale_2_from_amax(amax), one thread
//   3. quantize: reads scale_2 from device memory, and the weight again, last part first, so a
//      weight that fits in L2 costs one DRAM read (the recipe needs amax before any code)
// Without it scale_2 = 1 (the seeds' form) and only step 3 runs. Any arch (sm_80+).
#include <cuda_runtime.h>

#include <cstdint>

#include "cuda/cuda_backend.hpp"
#include "cuda/cuda_check.hpp"
#include "cuda/pack/pack_launch.hpp"
#include "cuda/pack/quantize_block.hpp"
#include "cuda/require_device.hpp"
#include "format/nvfp4_recipe.hpp"

namespace metrale::cuda {
namespace {

constexpr const char* kWho = "pack_bf16_weight_to_nvfp4_t";

// ---- 1. amax ---------------------------------------------------------------------------------

constexpr int kAmaxThreads = 256;

// |x| bits of one bf16 as the fp32 bits of |x| (exact), 0 for NaN (format::amax_update ignores
// NaN).
__device__ __forceinline__ std::uint32_t abs_bits_or_zero(std::uint32_t bf16_bits) {
  const std::uint32_t magnitude = bf16_bits & 0x7FFFu;
  return magnitude > 0x7F80u ? 0u : magnitude << 16;
}

__device__ __forceinline__ std::uint32_t word_amax(std::uint32_t word, std::uint32_t running) {
  running = max(running, abs_bits_or_zero(word & 0xFFFFu));
  return max(running, abs_bits_or_zero(word >> 16));
}

// Grid-stride over 16-byte vectors (N·K is a multiple of 16, so of 8 bf16); one atomic per block.
__global__ void __launch_bounds__(kAmaxThreads)
    amax_kernel(const uint4* __restrict__ weight, std::size_t vectors,
                std::uint32_t* __restrict__ amax_bits) {
  std::uint32_t running = 0;
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < vectors;
       i += stride) {
    // Normal caching: what stays in L2 is read again by the quantize pass (see there).
    const uint4 v = __ldg(weight + i);
    running = word_amax(v.x, running);
    running = word_amax(v.y, running);
    running = word_amax(v.z, running);
    running = word_amax(v.w, running);
  }
  running = __reduce_max_sync(0xFFFFFFFFu, running);
  __shared__ std::uint32_t warp_max[kAmaxThreads / 32];
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  if (lane == 0) warp_max[warp] = running;
  __syncthreads();
  if (warp == 0) {
    running = lane < kAmaxThreads / 32 ? warp_max[lane] : 0u;
    running = __reduce_max_sync(0xFFFFFFFFu, running);
    if (lane == 0 && running != 0) atomicMax(amax_bits, running);
  }
}

// ---- 2. finalize -----------------------------------------------------------------------------

__global__ void finalize_scale_2_kernel(float* scale_2) {
  const float amax = format::bits_to_float(*reinterpret_cast<const std::uint32_t*>(scale_2));
  *scale_2 = format::scale_2_from_amax(amax);
}

// ---- 3. quantize -----------------------------------------------------------------------------
// One thread per pair of 16-element blocks (32 bf16 = 64 bytes in, 16 bytes of codes out). A CTA
// covers a tile of 32 rows x 16 blocks (256 elements of K): each warp reads 4 rows x 512 contiguous
// bytes, and the tile's scales go through shared memory so that they leave as 32-byte runs of
// [K/16, N] (n contiguous) instead of scattered bytes.

constexpr int kTileRows = 32;
constexpr int kTileBlocks = 16;  // 16-element blocks along K
constexpr int kQuantThreads = kTileRows * kTileBlocks / 2;
static_assert(kQuantThreads == 256, "one thread per pair of blocks of a 32 x 16-block tile");

struct QuantizeParams {
  const bf16_bits* weight;  // [N, K]
  std::uint8_t* packed;     // [N, K/2]
  std::uint8_t* scale;      // [K/16, N]
  const float* scale_2;     // device scalar, or null for scale_2 = 1
  std::int64_t n, k;
  std::int64_t row_tiles, col_tiles;
};

__device__ __forceinline__ void load_block(const bf16_bits* src, std::uint32_t (&words)[8]) {
  const uint4 lo = __ldcs(reinterpret_cast<const uint4*>(src));
  const uint4 hi = __ldcs(reinterpret_cast<const uint4*>(src + 8));
  words[0] = lo.x, words[1] = lo.y, words[2] = lo.z, words[3] = lo.w;
  words[4] = hi.x, words[5] = hi.y, words[6] = hi.z, words[7] = hi.w;
}

__global__ void __launch_bounds__(kQuantThreads) quantize_kernel(QuantizeParams p) {
  __shared__ std::uint8_t tile_scales[kTileBlocks][kTileRows];
  const float scale_2 = p.scale_2 ? *p.scale_2 : 1.0f;
  const std::int64_t blocks_per_row = p.k / format::kBlockSize;
  const int row_in_tile = threadIdx.x / (kTileBlocks / 2);
  const int pair = threadIdx.x % (kTileBlocks / 2);
  const std::int64_t tiles = p.row_tiles * p.col_tiles;
  for (std::int64_t step = blockIdx.x; step < tiles; step += gridDim.x) {
    // Tiles run along K first, so neighbouring CTAs stream neighbouring bytes of the same rows,
    // and from the end of the tensor back: the amax pass ended there, so that part is still in
    // L2 (all of it when the weight fits: then DRAM sees one read instead of two).
    const std::int64_t tile = tiles - 1 - step;
    const std::int64_t row0 = tile / p.col_tiles * kTileRows;
    const std::int64_t block0 = tile % p.col_tiles * kTileBlocks;
    const std::int64_t n = row0 + row_in_tile;
    const std::int64_t b = block0 + 2 * pair;
    const bool first = n < p.n && b < blocks_per_row;
    const bool second = n < p.n && b + 1 < blocks_per_row;
    std::uint32_t words0[8], words1[8];
    if (first) load_block(p.weight + n * p.k + b * format::kBlockSize, words0);
    if (second) load_block(p.weight + n * p.k + (b + 1) * format::kBlockSize, words1);
    // The block scale from the recipe itself, the codes from its division-free equivalent
    // (e2m1_thresholds.hpp): an IEEE division per element is where the time would go otherwise.
    pack::PackedBlock block0_out{}, block1_out{};
    if (first) {
      block0_out = pack::quantize_block(words0, scale_2);
      tile_scales[2 * pair][row_in_tile] = block0_out.scale;
    }
    if (second) {
      block1_out = pack::quantize_block(words1, scale_2);
      tile_scales[2 * pair + 1][row_in_tile] = block1_out.scale;
    }
    const uint2 packed0 = make_uint2(block0_out.bytes[0], block0_out.bytes[1]);
    const uint2 packed1 = make_uint2(block1_out.bytes[0], block1_out.bytes[1]);
    // The 16-byte store needs the row start 16-byte aligned: K/2 % 16 == 0, i.e. K % 32 == 0.
    if (first) {
      std::uint8_t* dst = p.packed + n * (p.k / 2) + b * 8;
      if (second && p.k % 32 == 0) {
        *reinterpret_cast<uint4*>(dst) = make_uint4(packed0.x, packed0.y, packed1.x, packed1.y);
      } else {
        *reinterpret_cast<uint2*>(dst) = packed0;
        if (second) *reinterpret_cast<uint2*>(dst + 8) = packed1;
      }
    }
    __syncthreads();
    // Scales out: 16 runs of 32 consecutive n (one [K/16, N] row segment each).
    for (int i = threadIdx.x; i < kTileBlocks * kTileRows; i += kQuantThreads) {
      const int block_in_tile = i / kTileRows, r = i % kTileRows;
      const std::int64_t sn = row0 + r, sb = block0 + block_in_tile;
      if (sn < p.n && sb < blocks_per_row) p.scale[sb * p.n + sn] = tile_scales[block_in_tile][r];
    }
    __syncthreads();  // tile_scales is reused by the next tile
  }
}

}  // namespace

void pack_nvfp4(const PackNvfp4& args, core::Buffer /*ws*/, void* stream) {
  require_device(kWho);
  if (args.n <= 0 || args.k <= 0) return;
  require_aligned_16(kWho, "weight_bf16", args.weight);
  require_aligned_16(kWho, "packed_t", args.packed);
  const auto s = static_cast<cudaStream_t>(stream);
  const std::int64_t n = args.n, k = args.k;
  if (args.scale_2_out != nullptr) {
    METRALE_CUDA_CHECK(cudaMemsetAsync(args.scale_2_out, 0, sizeof(float), s));
    const std::size_t vectors = static_cast<std::size_t>(n * k / 8);
    const unsigned grid = pack::grid_size(vectors, kAmaxThreads, 8);
    amax_kernel<<<grid, kAmaxThreads, 0, s>>>(reinterpret_cast<const uint4*>(args.weight), vectors,
                                              reinterpret_cast<std::uint32_t*>(args.scale_2_out));
    METRALE_CUDA_CHECK_LAUNCH(amax_kernel);
    finalize_scale_2_kernel<<<1, 1, 0, s>>>(args.scale_2_out);
    METRALE_CUDA_CHECK_LAUNCH(finalize_scale_2_kernel);
  }
  QuantizeParams p{};
  p.weight = args.weight;
  p.packed = args.packed;
  p.scale = args.scale;
  p.scale_2 = args.scale_2_out;
  p.n = n;
  p.k = k;
  p.row_tiles = (n + kTileRows - 1) / kTileRows;
  p.col_tiles = (k / format::kBlockSize + kTileBlocks - 1) / kTileBlocks;
  const unsigned grid = pack::grid_size(static_cast<std::size_t>(p.row_tiles * p.col_tiles), 1, 8);
  quantize_kernel<<<grid, kQuantThreads, 0, s>>>(p);
  METRALE_CUDA_CHECK_LAUNCH(quantize_kernel);
}

}  // namespace metrale::cuda
