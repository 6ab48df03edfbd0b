// Dequantization and row gather for the CUTLASS reference arm (see dequant.cuh), sm_90a.
// One thread per 16-element block: it reads the block's 8 packed bytes and its scale byte,
// decodes with src/format's e2m1_to_float / e4m3_to_float (the single definition of the
// numbers), and writes 16 bf16 (two 16-byte stores). Adjacent threads take adjacent blocks of a
// row, so the packed reads and the bf16 writes are contiguous across a warp.
#include <algorithm>

#include "core/error.hpp"
#include "cuda/cuda_check.hpp"
#include "format/bf16.hpp"
#include "format/e2m1.hpp"
#include "format/e4m3.hpp"
#include "format/layouts.hpp"
#include "reference/cutlass/dequant.cuh"

namespace metrale::reference::cutlass::detail {
namespace {

constexpr int kThreads = 256;
// Enough blocks to fill an H200 many times over; the kernels stride over the rest.
constexpr std::int64_t kMaxBlocksX = 8192;

__device__ __forceinline__ std::uint32_t dequant_pair(std::uint32_t byte, float scale) {
  const float lo = format::e2m1_to_float(static_cast<std::uint8_t>(byte & 0xFu)) * scale;
  const float hi = format::e2m1_to_float(static_cast<std::uint8_t>(byte >> 4)) * scale;
  // e2m1 · e4m3 has at most 6 significant bits and lies in [2^-10, 2688]: exact in bf16.
  return format::float_to_bf16(lo) | (static_cast<std::uint32_t>(format::float_to_bf16(hi)) << 16);
}

__global__ void __launch_bounds__(kThreads)
    dequantize_kernel(const DequantJob* jobs, DequantJob single, int n, int k, ScaleLayout layout) {
  const DequantJob job = jobs != nullptr ? jobs[blockIdx.y] : single;
  const std::int64_t blocks_per_row = k / 16;
  const std::int64_t total = static_cast<std::int64_t>(n) * blocks_per_row;
  for (std::int64_t t = static_cast<std::int64_t>(blockIdx.x) * kThreads + threadIdx.x; t < total;
       t += static_cast<std::int64_t>(gridDim.x) * kThreads) {
    const std::int64_t row = t / blocks_per_row;
    const std::int64_t b = t - row * blocks_per_row;
    const uint2 codes = *reinterpret_cast<const uint2*>(job.packed + row * (k / 2) + b * 8);
    const std::size_t scale_at = layout == ScaleLayout::sfb ? format::sfb_offset(row, b, k)
                                                            : format::k16_by_n_offset(row, b, n);
    const float scale = format::e4m3_to_float(job.scale[scale_at]);
    std::uint32_t w[8];
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      w[i] = dequant_pair((codes.x >> (8 * i)) & 0xFFu, scale);
      w[4 + i] = dequant_pair((codes.y >> (8 * i)) & 0xFFu, scale);
    }
    uint4* dst = reinterpret_cast<uint4*>(job.out + row * k + b * 16);
    dst[0] = make_uint4(w[0], w[1], w[2], w[3]);
    dst[1] = make_uint4(w[4], w[5], w[6], w[7]);
  }
}

__global__ void __launch_bounds__(kThreads)
    gather_rows_kernel(const bf16_bits* a, int a_rows, const std::int32_t* token_ids, int first,
                       int rows, int k, bf16_bits* out) {
  const int chunks = k / 8;  // 16-byte chunks per row
  for (int r = blockIdx.x; r < rows; r += gridDim.x) {
    const std::int32_t token = token_ids[first + r];
    const bool valid = token >= 0 && (a_rows <= 0 || token < a_rows);  // a_rows <= 0: unchecked
    const uint4* src =
        reinterpret_cast<const uint4*>(a + static_cast<std::int64_t>(valid ? token : 0) * k);
    uint4* dst = reinterpret_cast<uint4*>(out + static_cast<std::int64_t>(r) * k);
    for (int c = threadIdx.x; c < chunks; c += kThreads) {
      dst[c] = valid ? src[c] : make_uint4(0, 0, 0, 0);
    }
  }
}

}  // namespace

void launch_dequantize(const DequantJob* device_jobs, int job_count, DequantJob single, int n,
                       int k, ScaleLayout layout, cudaStream_t stream) {
  const int slots = device_jobs != nullptr ? job_count : 1;
  if (slots <= 0 || n <= 0 || k <= 0) return;
  if (slots > 65535) {
    fail_message(Status::unsupported, concat("dequantize (CUTLASS arm): ", slots,
                                             " weights in one call exceed the "
                                             "65535 grid rows of the dequantization kernel"));
  }
  const std::int64_t total = static_cast<std::int64_t>(n) * (k / 16);
  const dim3 grid(
      static_cast<unsigned>(std::min<std::int64_t>((total + kThreads - 1) / kThreads, kMaxBlocksX)),
      static_cast<unsigned>(slots));
  dequantize_kernel<<<grid, kThreads, 0, stream>>>(device_jobs, single, n, k, layout);
  METRALE_CUDA_CHECK_LAUNCH(dequantize_kernel);
}

void launch_gather_rows(const bf16_bits* a, int a_rows, const std::int32_t* token_ids, int first,
                        int rows, int k, bf16_bits* out, cudaStream_t stream) {
  if (rows <= 0) return;
  const unsigned blocks = static_cast<unsigned>(std::min<std::int64_t>(rows, kMaxBlocksX));
  gather_rows_kernel<<<blocks, kThreads, 0, stream>>>(a, a_rows, token_ids, first, rows, k, out);
  METRALE_CUDA_CHECK_LAUNCH(gather_rows_kernel);
}

}  // namespace metrale::reference::cutlass::detail
