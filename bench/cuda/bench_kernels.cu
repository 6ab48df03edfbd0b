// Device kernels of the bench (bench_kernels.hpp). Any arch.
#include <algorithm>
#include <cstring>

#include "bench/cuda/bench_kernels.hpp"
#include "bench/random.hpp"
#include "cuda/cuda_check.hpp"
#include "format/bf16.hpp"

namespace metrale::bench {
namespace {

constexpr int kThreads = 256;
constexpr int kStreamThreads = 512;
constexpr int kStreamBlocksPerSm = 4;  // 2048 threads per SM: full occupancy on sm_80+

unsigned grid_for(std::size_t items) {
  return static_cast<unsigned>(
      std::clamp<std::size_t>((items + kThreads - 1) / kThreads, 1, std::size_t{1} << 20));
}

__global__ void fill_normal_kernel(std::uint16_t* out, std::size_t count, std::uint64_t seed,
                                   float stddev) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    out[i] = format::float_to_bf16(stddev * normal_at(seed, i));
  }
}

__device__ __forceinline__ std::uint32_t fold(uint4 v) {
  return v.x ^ v.y ^ v.z ^ v.w;
}

__global__ void read_stream_kernel(const uint4* __restrict__ data, std::size_t count,
                                   std::uint32_t* sink) {
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x;
  std::uint32_t acc = 0;
  for (; i + 3 * stride < count; i += 4 * stride) {
    const uint4 a = __ldcs(data + i);
    const uint4 b = __ldcs(data + i + stride);
    const uint4 c = __ldcs(data + i + 2 * stride);
    const uint4 d = __ldcs(data + i + 3 * stride);
    acc ^= fold(a) ^ fold(b) ^ fold(c) ^ fold(d);
  }
  for (; i < count; i += stride) acc ^= fold(__ldcs(data + i));
  // Practically never true, but the compiler cannot know, so every load above is kept.
  if (acc == 0x9E3779B9u) *sink = acc;
}

__global__ void copy_stream_kernel(const uint4* __restrict__ src, uint4* __restrict__ dst,
                                   std::size_t count) {
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x;
  for (; i + 3 * stride < count; i += 4 * stride) {
    const uint4 a = __ldcs(src + i);
    const uint4 b = __ldcs(src + i + stride);
    const uint4 c = __ldcs(src + i + 2 * stride);
    const uint4 d = __ldcs(src + i + 3 * stride);
    __stcs(dst + i, a);
    __stcs(dst + i + stride, b);
    __stcs(dst + i + 2 * stride, c);
    __stcs(dst + i + 3 * stride, d);
  }
  for (; i < count; i += stride) __stcs(dst + i, __ldcs(src + i));
}

// scratch[0]: bits of max |x - ref|, scratch[1]: bits of max |ref|, scratch[2]: NaN count in x.
// Non-negative floats order like their bit patterns, so atomicMax on the bits is a float max.
__global__ void compare_kernel(const std::uint16_t* x, const std::uint16_t* ref, std::size_t count,
                               std::uint32_t* scratch) {
  float diff = 0, mag = 0;
  unsigned nans = 0;
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    const float a = format::bf16_to_float(x[i]);
    const float b = format::bf16_to_float(ref[i]);
    if (format::is_nan_bits(a)) {
      ++nans;
      continue;
    }
    if (!format::is_nan_bits(b)) {
      diff = fmaxf(diff, fabsf(a - b));
      mag = fmaxf(mag, fabsf(b));
    }
  }
  atomicMax(scratch + 0, __float_as_uint(diff));
  atomicMax(scratch + 1, __float_as_uint(mag));
  if (nans) atomicAdd(scratch + 2, nans);
}

}  // namespace

void fill_normal_bf16(std::uint16_t* out, std::size_t count, std::uint64_t seed, float stddev,
                      cudaStream_t stream) {
  if (count == 0) return;
  fill_normal_kernel<<<grid_for(count), kThreads, 0, stream>>>(out, count, seed, stddev);
  METRALE_CUDA_CHECK_LAUNCH(fill_normal_kernel);
}

void read_stream(const void* data, std::size_t bytes, std::uint32_t* sink, int sms,
                 cudaStream_t stream) {
  read_stream_kernel<<<sms * kStreamBlocksPerSm, kStreamThreads, 0, stream>>>(
      static_cast<const uint4*>(data), bytes / 16, sink);
  METRALE_CUDA_CHECK_LAUNCH(read_stream_kernel);
}

void copy_stream(const void* src, void* dst, std::size_t bytes, int sms, cudaStream_t stream) {
  copy_stream_kernel<<<sms * kStreamBlocksPerSm, kStreamThreads, 0, stream>>>(
      static_cast<const uint4*>(src), static_cast<uint4*>(dst), bytes / 16);
  METRALE_CUDA_CHECK_LAUNCH(copy_stream_kernel);
}

Comparison compare_bf16(const std::uint16_t* x, const std::uint16_t* ref, std::size_t count,
                        std::uint32_t* scratch, cudaStream_t stream) {
  METRALE_CUDA_CHECK(cudaMemsetAsync(scratch, 0, 3 * sizeof(std::uint32_t), stream));
  if (count > 0) {
    compare_kernel<<<std::min(grid_for(count), 4096u), kThreads, 0, stream>>>(x, ref, count,
                                                                              scratch);
    METRALE_CUDA_CHECK_LAUNCH(compare_kernel);
  }
  std::uint32_t host[3] = {};
  METRALE_CUDA_CHECK(cudaMemcpyAsync(host, scratch, sizeof host, cudaMemcpyDeviceToHost, stream));
  METRALE_CUDA_CHECK(cudaStreamSynchronize(stream));
  Comparison c;
  std::memcpy(&c.max_abs_diff, &host[0], sizeof(float));
  std::memcpy(&c.max_abs_ref, &host[1], sizeof(float));
  c.nan_count = host[2];
  return c;
}

}  // namespace metrale::bench
