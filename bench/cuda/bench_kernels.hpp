// Small device kernels of the bench (any arch): random normal bf16 fill, the streaming read and
// copy kernels behind the bandwidth ceilings, and the output comparison against a reference.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

namespace metrale::bench {

// out[i] = bf16(stddev · N(0,1)) from (seed, i): the same values as random.hpp on the host.
void fill_normal_bf16(std::uint16_t* out, std::size_t count, std::uint64_t seed, float stddev,
                      cudaStream_t stream);

// Reads `bytes` (a multiple of 16) with 16-byte streaming loads, keeping 4 loads in flight per
// thread; `sink` (one uint32) is written only in a case that never happens, so the loads stay.
void read_stream(const void* data, std::size_t bytes, std::uint32_t* sink, int sms,
                 cudaStream_t stream);
// dst = src, 16 bytes at a time.
void copy_stream(const void* src, void* dst, std::size_t bytes, int sms, cudaStream_t stream);

// Compares two bf16 arrays: the largest |x - ref| (NaN-free pairs), the largest |ref| and the
// number of NaN in x. `scratch` holds 3 uint32 (device); the result is synchronously read back.
struct Comparison {
  float max_abs_diff = 0, max_abs_ref = 0;
  unsigned nan_count = 0;
};
Comparison compare_bf16(const std::uint16_t* x, const std::uint16_t* ref, std::size_t count,
                        std::uint32_t* scratch, cudaStream_t stream);

}  // namespace metrale::bench
