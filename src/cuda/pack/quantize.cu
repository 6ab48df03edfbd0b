// metrale::cuda::pack_nvfp4: bf16 weight [N, K] -> packed e2m1 [N, K/2] (even k in the low
// nibble) + e4m3 block scales [K/16, N], the ModelOpt recipe of format/nvfp4_recipe.hpp, bit for
// bit the CPU reference (quantize_block.hpp: the recipe's block scale, its proven-equal
// division-free codes). No fast-math anywhere. NaN or ±Inf weights are refused, naming the
// lowest flat index, as on the CPU backend. Any arch (sm_80+). Two forms, on the caller's stream:
//   scale_2 computed (scale_2_out set): the recipe needs the tensor's amax before any code, so
//     1. scan: one read of the weight: amax and the first non-finite index into the scratch
//     2. quantize: unless the scan found a NaN or ±Inf (then it writes nothing: outputs and
//        *scale_2_out untouched), reads the weight again, last part first (what the scan left
//        in L2), writes codes, scales and *scale_2_out
//     3. the host sync and the check, which refuses the weight naming the scan's index. The
//        check sat between the passes until 2026-12-03: the GPU idled for its round trip.
//   seeds' form (scale_2 = 1): the quantize pass alone records the first non-finite index; then
//     the host sync and the check. A refusal has written packed_t and scale_t (within their
//     sizes, nothing else): finding the index needs the read that quantizes.
// The quantize pass runs on one of two kernels that write the same bits: quantize_lean.cu's, the
// default (fewer instructions a tile: 0.79-0.85x the time on an H100), or quantize_kernel below,
// the earlier one (METRALE_CUDA_QUANTIZER=proven, for A/B runs). The scratch is 16 bytes of the
// call's workspace. A host sync cannot be captured into a CUDA graph, so a capturing stream is
// refused before anything is enqueued.
#include <cuda_runtime.h>

#include <cstdint>

#include "core/error.hpp"
#include "core/validate.hpp"
#include "cuda/cuda_backend.hpp"
#include "cuda/cuda_check.hpp"
#include "cuda/pack/pack_launch.hpp"
#include "cuda/pack/quantize_block.hpp"
#include "cuda/pack/quantize_tile.cuh"
#include "cuda/pack/scale_table.hpp"
#include "cuda/per_device.hpp"
#include "cuda/require_device.hpp"
#include "format/nvfp4_recipe.hpp"

namespace metrale::cuda {
namespace {

// ---- 1. scan ---------------------------------------------------------------------------------
// Grid-stride over 16-byte vectors (N·K is a multiple of 16), 4 loads in flight per thread; the
// amax as both lanes' max magnitude (one max.u16x2 per word); the non-finite test once per 4
// vectors on that max. Per thread the indices ascend, so its first find is its lowest.

constexpr int kScanThreads = 256;
constexpr int kScanUnroll = 4;

__device__ __forceinline__ unsigned long long first_bad_in(const uint4 (&v)[kScanUnroll],
                                                           std::size_t i, std::size_t stride) {
  for (int u = 0; u < kScanUnroll; ++u) {
    std::uint32_t words[4];
    load_words(v[u], words);
    const int e = pack::first_non_finite(words);
    if (e >= 0) return (i + u * stride) * 8 + e;
  }
  return kNoIndex;
}

__global__ void __launch_bounds__(kScanThreads)
    scan_kernel(const uint4* __restrict__ weight, std::size_t vectors, PackScratch* scratch) {
  std::uint32_t running = 0;
  unsigned long long first_bad = kNoIndex;
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x;
  for (; i < vectors; i += kScanUnroll * stride) {
    // Normal caching: what stays in L2 is read again by the quantize pass.
    uint4 v[kScanUnroll];
#pragma unroll
    for (int u = 0; u < kScanUnroll; ++u) {
      const std::size_t at = i + u * stride;
      v[u] = at < vectors ? __ldg(weight + at) : make_uint4(0, 0, 0, 0);
    }
    std::uint32_t step_max = 0;
#pragma unroll
    for (int u = 0; u < kScanUnroll; ++u) {
      std::uint32_t words[4];
      load_words(v[u], words);
      step_max = pack::max_lanes(step_max, pack::max_magnitudes(words));
    }
    running = pack::max_lanes(running, step_max);
    if (pack::max_of_lanes(step_max) >= pack::kNonFiniteMagnitude && first_bad == kNoIndex)
      first_bad = first_bad_in(v, i, stride);
  }
  publish_first_bad(first_bad, scratch);
  running = __reduce_max_sync(0xFFFFFFFFu, pack::max_of_lanes(running));
  __shared__ std::uint32_t warp_max[kScanThreads / 32];
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  if (lane == 0) warp_max[warp] = running;
  __syncthreads();
  if (warp == 0) {
    running = lane < kScanThreads / 32 ? warp_max[lane] : 0u;
    running = __reduce_max_sync(0xFFFFFFFFu, running);
    if (lane == 0 && running != 0) atomicMax(&scratch->amax_magnitude, running);
  }
}

// ---- 3. quantize -----------------------------------------------------------------------------
// A CTA tile is 32 rows x 256 elements (16 blocks of 16). Warp w takes rows 4w..4w+3; lane l
// takes elements [8l, 8l + 8) of each, one 16-byte load per row, so every load instruction reads
// 512 contiguous bytes and every code store (4 bytes a lane) writes 128. Lanes l and l ^ 1 hold
// the two halves of a block: they exchange their half's max, and each computes the scale of two
// of the four rows' blocks. The codes' thresholds come from a per-CTA table, one entry per scale
// byte (built once: they depend only on the byte and scale_2). The tile's scales go through
// shared memory (two buffers: one barrier per tile) so that they leave as 32-byte runs of
// [K/16, N]. The next tile's loads are issued before the current tile's work. The tile's shape,
// its walk and its scale stores are quantize_tile.cuh's, shared with quantize_lean.cu.

struct TileLoad {
  uint4 v[kRowsPerWarp];
};

// A thread's rows of a tile: its first row's 16 bytes of weight and 4 bytes of codes (the next
// rows follow K / 8 vectors and K / 8 words on: the same stride for both), and how many of its
// rows lie in the tensor (none when its columns are past K). Found in 64-bit arithmetic for a
// tile's loads and again, a tile later, for its code stores (kept in between, it would cost the
// registers that the 64-register bound below does not have); each row then costs an add and a
// compare (it was a 64-bit multiply and two 64-bit compares a row, for the loads and again for
// the stores: ~110 of a tile's ~490 instructions outside the codes, by a count of the SASS).
struct ThreadRows {
  const uint4* weight;
  unsigned int* codes;
  int rows;
};

__device__ __forceinline__ ThreadRows thread_rows(const QuantizeParams& p, TileOrigin t, int warp,
                                                  int lane) {
  const std::int64_t row = t.row0 + kRowsPerWarp * warp, col = t.col0 + 8 * lane;
  const std::int64_t inside = col < p.k ? p.n - row : 0;
  return {reinterpret_cast<const uint4*>(p.weight + row * p.k + col),
          reinterpret_cast<unsigned int*>(p.packed + row * (p.k / 2) + col / 2),
          static_cast<int>(inside < 0              ? 0
                           : inside < kRowsPerWarp ? inside
                                                   : kRowsPerWarp)};
}

__device__ __forceinline__ void load_tile(const QuantizeParams& p, TileOrigin t, int warp, int lane,
                                          TileLoad& out) {
  const ThreadRows at = thread_rows(p, t, warp, lane);
  const std::int64_t stride = p.k / 8;
#pragma unroll
  for (int j = 0; j < kRowsPerWarp; ++j)  // streaming: this is the last read of the weight
    out.v[j] = j < at.rows ? __ldcs(at.weight + j * stride) : make_uint4(0, 0, 0, 0);
}

// 4 CTAs an SM (at most 64 registers; ptxas spills one word, reloaded once a tile): the pass is
// bound by its instruction issue and latency, and at 70 registers only 3 fit, 24 warps. With the
// hardware conversion above: 0.88-0.93x the time (docs/perf.md, "2026-12-03, second session").
__global__ void __launch_bounds__(kQuantThreads, 4) quantize_kernel(QuantizeParams p) {
  __shared__ pack::CodeConstants table[pack::kScaleBytes];
  __shared__ alignas(4) std::uint8_t tile_scales[2][kTileBlocks][kTileRows];
  // After a scan that found a NaN or ±Inf, write nothing: the host refuses the weight.
  if (p.scale_2_out && p.scratch->first_bad_complement != 0) return;
  const float scale_2 = p.scale_2_out ? format::scale_2_from_amax(format::bf16_to_float(
                                            static_cast<std::uint16_t>(p.scratch->amax_magnitude)))
                                      : 1.0f;
  for (int i = threadIdx.x; i < pack::kScaleBytes; i += kQuantThreads)
    table[i] = pack::code_constants(static_cast<std::uint8_t>(i), scale_2);
  if (p.scale_2_out && blockIdx.x == 0 && threadIdx.x == 0) *p.scale_2_out = scale_2;
  __syncthreads();

  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const int my_rows = 2 * (lane & 1);  // the two rows whose block scales this lane computes
  const std::int64_t tiles = p.row_tiles * p.col_tiles;
  unsigned long long first_bad = kNoIndex;
  TileLoad cur{}, next{};
  TileCursor at(p, blockIdx.x);  // the tile being worked on; `ahead`, the one being loaded
  if (blockIdx.x < tiles) load_tile(p, at.origin(), warp, lane, cur);
  TileCursor ahead = at;
  int buffer = 0;
  for (std::int64_t step = blockIdx.x; step < tiles; step += gridDim.x, buffer ^= 1) {
    ahead.advance(p);
    if (step + gridDim.x < tiles) load_tile(p, ahead.origin(), warp, lane, next);
    const TileOrigin t = at.origin();
    at = ahead;
    std::uint32_t words[kRowsPerWarp][4];
    std::uint32_t block_max[kRowsPerWarp];
#pragma unroll
    for (int j = 0; j < kRowsPerWarp; ++j) {
      load_words(cur.v[j], words[j]);
      const std::uint32_t half_max = pack::max_of_lanes(pack::max_magnitudes(words[j]));
      block_max[j] = max(half_max, __shfl_xor_sync(0xFFFFFFFFu, half_max, 1));
      if (half_max >= pack::kNonFiniteMagnitude) {  // rows past N and columns past K load zeros
        const std::int64_t row = t.row0 + kRowsPerWarp * warp + j, col = t.col0 + 8 * lane;
        first_bad = min(first_bad, static_cast<unsigned long long>(
                                       row * p.k + col + pack::first_non_finite(words[j])));
      }
    }
    // Two scales here, two from the partner lane.
    const std::uint32_t mine =
        pack::block_scale_byte(my_rows ? block_max[2] : block_max[0], scale_2) |
        pack::block_scale_byte(my_rows ? block_max[3] : block_max[1], scale_2) << 8;
    const std::uint32_t theirs = __shfl_xor_sync(0xFFFFFFFFu, mine, 1);
    const ThreadRows rows = thread_rows(p, t, warp, lane);
#pragma unroll
    for (int j = 0; j < kRowsPerWarp; ++j) {
      const std::uint32_t pair = (j & 2) == my_rows ? mine : theirs;
      const auto sf = static_cast<std::uint8_t>(pair >> (8 * (j & 1)));
      if ((j & 2) == my_rows) tile_scales[buffer][lane / 2][kRowsPerWarp * warp + j] = sf;
      if (j < rows.rows)
        __stcs(rows.codes + j * (p.k / 8), pack::pack_four_words(words[j], table[sf], sf, scale_2));
    }
    // One barrier a tile: a thread writing this buffer again (two tiles on) has passed the next
    // barrier, which every reader of it reaches only after its stores below.
    __syncthreads();
    store_tile_scales(p, t, tile_scales[buffer]);
    cur = next;
  }
  publish_first_bad(first_bad, p.scratch);
}

// ---- launch ----------------------------------------------------------------------------------

// Waits for the stream and refuses the weight if the device found a NaN or ±Inf in it.
void check_finite(std::string_view who, const PackNvfp4& args, const PackScratch* scratch,
                  cudaStream_t stream) {
  PackScratch host{};
  METRALE_CUDA_CHECK(cudaMemcpyAsync(&host, scratch, sizeof host, cudaMemcpyDeviceToHost, stream));
  METRALE_CUDA_CHECK(cudaStreamSynchronize(stream));
  if (host.first_bad_complement == 0) return;
  const std::size_t index = ~host.first_bad_complement;
  // The index is one the kernels found in [0, N·K); anything else means another call on another
  // stream wrote the same scratch (docs/api.md: a workspace is one stream's at a time).
  if (index >= static_cast<std::size_t>(args.n) * static_cast<std::size_t>(args.k))
    fail_message(Status::internal,
                 concat(who, ": the first non-finite index read back, ", index,
                        ", is past the weight's ", args.n, " x ", args.k,
                        " values: its scratch in the workspace was overwritten (was "
                        "the workspace in use on another stream?)"));
  bf16_bits value = 0;
  METRALE_CUDA_CHECK(cudaMemcpy(&value, args.weight + index, sizeof value, cudaMemcpyDeviceToHost));
  core::fail_non_finite_weight(who, "weight_bf16", index, format::bf16_to_float(value), args.k);
}

}  // namespace

// A host sync cannot sit inside a CUDA graph capture: refuse before enqueuing anything.
void refuse_pack_capture(std::string_view who, void* stream) {
  refuse_capture(who, stream,
                 "the check for NaN or Inf weights reads its result on the host; quantize "
                 "outside the capture");
}

void pack_nvfp4(std::string_view who, const PackNvfp4& args, core::Buffer ws, void* stream,
                core::CudaQuantizer quantizer) {
  require_device(who);
  if (args.n <= 0 || args.k <= 0) return;
  require_aligned_16(who, "weight_bf16", args.weight);
  require_aligned_16(who, "packed_t", args.packed);
  const auto s = static_cast<cudaStream_t>(stream);
  auto* scratch = static_cast<PackScratch*>(ws.ptr);
  METRALE_CUDA_CHECK(cudaMemsetAsync(scratch, 0, sizeof(PackScratch), s));
  const std::int64_t n = args.n, k = args.k;
  if (args.scale_2_out != nullptr) {
    const std::size_t vectors = static_cast<std::size_t>(n * k / 8);
    const unsigned grid = pack::grid_size(vectors, kScanThreads * kScanUnroll,
                                          resident_ctas(scan_kernel, kScanThreads));
    scan_kernel<<<grid, kScanThreads, 0, s>>>(reinterpret_cast<const uint4*>(args.weight), vectors,
                                              scratch);
    METRALE_CUDA_CHECK_LAUNCH(scan_kernel);
  }
  QuantizeParams p{};
  p.weight = args.weight;
  p.packed = args.packed;
  p.scale = args.scale;
  p.scale_2_out = args.scale_2_out;
  p.scratch = scratch;
  p.n = n;
  p.k = k;
  p.row_tiles = (n + kTileRows - 1) / kTileRows;
  p.col_tiles = (k + kTileCols - 1) / kTileCols;
  p.scale_words = n % 4 == 0 && reinterpret_cast<std::uintptr_t>(args.scale) % 4 == 0;
  if (quantizer == core::CudaQuantizer::lean) {
    quantize_lean(p, s);
  } else {
    const unsigned grid = pack::grid_size(static_cast<std::size_t>(p.row_tiles * p.col_tiles), 1,
                                          resident_ctas(quantize_kernel, kQuantThreads));
    quantize_kernel<<<grid, kQuantThreads, 0, s>>>(p);
    METRALE_CUDA_CHECK_LAUNCH(quantize_kernel);
  }
  check_finite(who, args, scratch, s);
}

}  // namespace metrale::cuda
