// The packing operations of the CUTLASS reference arm, sm_90a: an implementation independent of
// src/format and src/cuda/pack that takes its numbers and layouts from CUTLASS's own pieces, so
// the tests can hold our format code against a second opinion:
//   pack_nvfp4        bf16 W [N, K] -> packed [N, K/2] + e4m3 scales [K/16, N] (+ scale_2), the
//                     ModelOpt recipe of NVFP4.md §4 with CUTLASS's converters: float -> e4m3
//                     NumericConverter<float_e4m3_t, float, round_to_nearest_satfinite>, float ->
//                     e2m1 NumericConverter<float_e2m1_t, float>, e4m3 -> float float_e4m3_t;
//   swizzle_scales    scales -> SFB, offsets from CUTLASS's Sm1xxBlockScaledConfig<16>::
//                     tile_atom_to_shape_SFB (the layout CUTLASS's sm100 block-scaled GEMMs read);
//   transpose_packed  [N, K/2] <-> [K/2, N] bytes, addressed through cute layouts.
#include <algorithm>

#include <cute/layout.hpp>
#include <cute/tensor.hpp>
#include <cutlass/detail/sm100_blockscaled_layout.hpp>
#include <cutlass/float8.h>
#include <cutlass/float_subbyte.h>
#include <cutlass/numeric_conversion.h>

#include "format/layouts.hpp"
#include "reference/cutlass/common.cuh"

namespace metrale::reference::cutlass {
namespace {

constexpr int kThreads = 256;
constexpr std::int64_t kMaxBlocks = 8192;

unsigned blocks_for(std::int64_t work) {
  return static_cast<unsigned>(
      std::clamp<std::int64_t>((work + kThreads - 1) / kThreads, 1, kMaxBlocks));
}

__device__ __forceinline__ float bf16_value(bf16_bits bits) {
  return static_cast<float>(::cutlass::bfloat16_t::bitcast(bits));
}

// ---- pack_nvfp4
// ----------------------------------------------------------------------------------

// amax(|W|) as the bits of a non-negative float (their integer order is the float order), NaN
// elements skipped; `amax_bits` starts at 0.
__global__ void __launch_bounds__(kThreads)
    amax_kernel(const bf16_bits* weight, std::int64_t count, unsigned* amax_bits) {
  float local = 0.0f;
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * kThreads + threadIdx.x; i < count;
       i += static_cast<std::int64_t>(gridDim.x) * kThreads) {
    const float a = fabsf(bf16_value(weight[i]));
    if (!isnan(a)) local = fmaxf(local, a);
  }
  for (int offset = 16; offset > 0; offset /= 2) {
    local = fmaxf(local, __shfl_xor_sync(0xFFFFFFFFu, local, offset));
  }
  if ((threadIdx.x & 31) == 0) atomicMax(amax_bits, __float_as_uint(local));
}

// scale_2 = amax / 2688, or 1 when that is not a finite positive number (an all-zero tensor, an
// infinite element): NVFP4.md §4 step 1 and the recipe's rule for degenerate tensors.
__device__ __forceinline__ float scale_2_of(unsigned amax_bits) {
  const float scale_2 = __uint_as_float(amax_bits) / 2688.0f;
  return (scale_2 > 0.0f && scale_2 <= 3.4028234663852886e38f) ? scale_2 : 1.0f;
}

// One thread per 16-element block (n, b): its e4m3 scale and its 8 packed bytes.
__global__ void __launch_bounds__(kThreads)
    quantize_kernel(const bf16_bits* weight, std::uint8_t* packed, std::uint8_t* scale, int n,
                    int k, const unsigned* amax_bits) {
  using E4m3 = ::cutlass::float_e4m3_t;
  using E2m1 = ::cutlass::float_e2m1_t;
  const ::cutlass::NumericConverter<E4m3, float,
                                    ::cutlass::FloatRoundStyle::round_to_nearest_satfinite>
      to_e4m3;
  const ::cutlass::NumericConverter<E2m1, float, ::cutlass::FloatRoundStyle::round_to_nearest>
      to_e2m1;
  const float scale_2 = amax_bits != nullptr ? scale_2_of(*amax_bits) : 1.0f;
  const std::int64_t blocks_per_row = k / 16;
  const std::int64_t total = static_cast<std::int64_t>(n) * blocks_per_row;
  for (std::int64_t t = static_cast<std::int64_t>(blockIdx.x) * kThreads + threadIdx.x; t < total;
       t += static_cast<std::int64_t>(gridDim.x) * kThreads) {
    const std::int64_t row = t / blocks_per_row;
    const std::int64_t b = t - row * blocks_per_row;
    float x[16];
    float block_amax = 0.0f;
    for (int i = 0; i < 16; ++i) {
      x[i] = bf16_value(weight[row * k + b * 16 + i]);
      block_amax = fmaxf(block_amax, fabsf(x[i]));  // fmaxf ignores a NaN operand
    }
    // Step 2: sf = block_amax / (6·scale_2); 0 -> 1; NaN -> 448; clamp to [2^-9, 448]; e4m3.
    float sf = block_amax / (6.0f * scale_2);
    if (sf == 0.0f) sf = 1.0f;
    if (isnan(sf)) sf = 448.0f;
    sf = fminf(fmaxf(sf, 1.0f / 512.0f), 448.0f);
    const E4m3 sf_e4m3 = to_e4m3(sf);
    // Step 3: q = x / (float(sf)·scale_2), IEEE division, nearest-even e2m1, saturating at ±6.
    const float denominator = static_cast<float>(sf_e4m3) * scale_2;
    std::uint32_t words[2] = {0u, 0u};
    for (int i = 0; i < 16; ++i) {
      // A NaN element: CUTLASS's software converter keeps the NaN's sign (0xF when negative);
      // PTX cvt.rn.satfinite.e2m1x2 and cuda_fp4.h give +6 (0x7) for any NaN. Pass |q| so a NaN
      // becomes +6 as the hardware conversion does (for numbers |q| would change the sign).
      const float q = x[i] / denominator;
      const std::uint32_t code = to_e2m1(isnan(q) ? fabsf(q) : q).raw() & 0xFu;
      words[i / 8] |= code << (4 * (i % 8));  // step 4: even k in the low nibble
    }
    *reinterpret_cast<uint2*>(packed + row * (k / 2) + b * 8) = make_uint2(words[0], words[1]);
    scale[b * n + row] = sf_e4m3.raw();
  }
}

__global__ void store_scale_2_kernel(float* scale_2_out) {
  *scale_2_out = scale_2_of(*reinterpret_cast<const unsigned*>(scale_2_out));
}

// ---- swizzle_scales
// ------------------------------------------------------------------------------

template <class SfbLayout>
__global__ void __launch_bounds__(kThreads)
    swizzle_kernel(const std::uint8_t* scale_in, std::uint8_t* scale_out, int n, int k,
                   bool src_n_major, SfbLayout sfb) {
  const std::int64_t cols = k / 16;
  const std::int64_t total = static_cast<std::int64_t>(n) * cols;
  for (std::int64_t t = static_cast<std::int64_t>(blockIdx.x) * kThreads + threadIdx.x; t < total;
       t += static_cast<std::int64_t>(gridDim.x) * kThreads) {
    const int row = static_cast<int>(t / cols);
    const int b = static_cast<int>(t - static_cast<std::int64_t>(row) * cols);
    const std::uint8_t value = src_n_major ? scale_in[static_cast<std::int64_t>(b) * n + row]
                                           : scale_in[static_cast<std::int64_t>(row) * cols + b];
    // The SFB layout is indexed by (n, k, l) in elements; k = 16·b lands on block b.
    scale_out[sfb(row, b * 16, 0)] = value;
  }
}

// ---- transpose_packed
// ----------------------------------------------------------------------------

constexpr int kTile = 32;

// A 32x32 tile of (n, j) through shared memory: read with the source's contiguous coordinate
// across the lanes, write with the destination's. Offsets come from the two cute layouts.
template <bool kSrcAlongJ, class SrcLayout, class DstLayout>
__global__ void __launch_bounds__(kTile * 8)
    transpose_kernel(const std::uint8_t* src, std::uint8_t* dst, SrcLayout src_layout,
                     DstLayout dst_layout, int n, int half_k) {
  __shared__ std::uint8_t tile[kTile][kTile + 1];
  const int n0 = blockIdx.y * kTile, j0 = blockIdx.x * kTile;
  for (int r = threadIdx.y; r < kTile; r += blockDim.y) {
    const int nl = kSrcAlongJ ? r : threadIdx.x, jl = kSrcAlongJ ? threadIdx.x : r;
    if (n0 + nl < n && j0 + jl < half_k) tile[nl][jl] = src[src_layout(n0 + nl, j0 + jl)];
  }
  __syncthreads();
  for (int r = threadIdx.y; r < kTile; r += blockDim.y) {
    const int nl = kSrcAlongJ ? threadIdx.x : r, jl = kSrcAlongJ ? r : threadIdx.x;
    if (n0 + nl < n && j0 + jl < half_k) dst[dst_layout(n0 + nl, j0 + jl)] = tile[nl][jl];
  }
}

}  // namespace

void pack_nvfp4(const PackNvfp4& args, core::Buffer /*ws*/, void* stream) {
  const char* who = "pack_bf16_weight_to_nvfp4_t";
  if (args.n == 0 || args.k == 0) return;
  detail::require_sm90(who);
  detail::require_aligned(who, "packed", args.packed, 8);
  const auto cu_stream = static_cast<cudaStream_t>(stream);
  const std::int64_t count = static_cast<std::int64_t>(args.n) * args.k;
  // scale_2_out doubles as the amax accumulator (bits of a float), then receives scale_2: the
  // three launches are ordered on the stream, so no workspace is needed.
  auto* amax_bits = reinterpret_cast<unsigned*>(args.scale_2_out);
  if (amax_bits != nullptr) {
    METRALE_CUDA_CHECK(cudaMemsetAsync(amax_bits, 0, sizeof(unsigned), cu_stream));
    amax_kernel<<<blocks_for(count), kThreads, 0, cu_stream>>>(args.weight, count, amax_bits);
    METRALE_CUDA_CHECK_LAUNCH("amax_kernel");
  }
  quantize_kernel<<<blocks_for(count / 16), kThreads, 0, cu_stream>>>(
      args.weight, args.packed, args.scale, args.n, args.k, amax_bits);
  METRALE_CUDA_CHECK_LAUNCH("quantize_kernel");
  if (amax_bits != nullptr) {
    store_scale_2_kernel<<<1, 1, 0, cu_stream>>>(args.scale_2_out);
    METRALE_CUDA_CHECK_LAUNCH("store_scale_2_kernel");
  }
}

void swizzle_scales(const SwizzleScales& args, void* stream) {
  const char* who = "pack_weight_sfb";
  if (args.n == 0 || args.k == 0) return;
  detail::require_sm90(who);
  using Config = ::cutlass::detail::Sm1xxBlockScaledConfig<16>;
  const auto sfb = Config::tile_atom_to_shape_SFB(cute::make_shape(1, args.n, args.k, 1));
  const auto cutlass_bytes = static_cast<std::size_t>(cute::cosize(sfb));
  // The output buffer is sfb_bytes(N, K) by the API's contract; CUTLASS's layout must span it.
  const std::size_t buffer_bytes = format::sfb_bytes(args.n, args.k);
  if (cutlass_bytes != buffer_bytes) {
    fail_message(Status::internal, concat(who, " (CUTLASS): CUTLASS's SFB layout for N = ", args.n,
                                          ", K = ", args.k, " spans ", cutlass_bytes,
                                          " bytes but the output buffer holds "
                                          "sfb_bytes = ",
                                          buffer_bytes));
  }
  const auto cu_stream = static_cast<cudaStream_t>(stream);
  // The padding rows and columns must read as zero scales, never as stale bytes.
  METRALE_CUDA_CHECK(cudaMemsetAsync(args.scale_out, 0, cutlass_bytes, cu_stream));
  const std::int64_t work = static_cast<std::int64_t>(args.n) * (args.k / 16);
  swizzle_kernel<<<blocks_for(work), kThreads, 0, cu_stream>>>(
      args.scale_in, args.scale_out, args.n, args.k, args.src_n_major, sfb);
  METRALE_CUDA_CHECK_LAUNCH("swizzle_kernel");
}

void transpose_packed(const TransposePacked& args, void* stream) {
  const char* who = args.dir == TransposeDir::k_to_n ? "transpose_nvfp4_packed_kton"
                                                     : "transpose_nvfp4_packed_ntok";
  if (args.n == 0 || args.k == 0) return;
  detail::require_sm90(who);
  const int half_k = args.k / 2;
  const dim3 grid((half_k + kTile - 1) / kTile, (args.n + kTile - 1) / kTile);
  if (grid.y > 65535u) {
    fail_message(Status::unsupported, concat(who, " (CUTLASS): N = ", args.n, " exceeds the ",
                                             65535 * kTile, " rows of the transpose grid"));
  }
  // (n, j) -> byte offset in [N, K/2] (j contiguous) and in [K/2, N] (n contiguous).
  const auto shape =
      cute::make_shape(static_cast<std::int64_t>(args.n), static_cast<std::int64_t>(half_k));
  const auto n_by_half_k = cute::make_layout(shape, cute::LayoutRight{});
  const auto half_k_by_n = cute::make_layout(shape, cute::LayoutLeft{});
  const auto cu_stream = static_cast<cudaStream_t>(stream);
  const dim3 block(kTile, 8);
  if (args.dir == TransposeDir::k_to_n) {
    transpose_kernel<true><<<grid, block, 0, cu_stream>>>(args.src, args.dst, n_by_half_k,
                                                          half_k_by_n, args.n, half_k);
  } else {
    transpose_kernel<false><<<grid, block, 0, cu_stream>>>(args.src, args.dst, half_k_by_n,
                                                           n_by_half_k, args.n, half_k);
  }
  METRALE_CUDA_CHECK_LAUNCH("transpose_kernel");
}

}  // namespace metrale::reference::cutlass
