// Kernels of the naive NVFP4 path of the cuBLASLt reference arm (any arch): dequantize a packed
// NVFP4 weight to bf16, and gather activation rows through token ids. Plain CUDA cores; they
// exist to be measured against, not to be fast.
#include <algorithm>
#include <cstdint>

#include "cuda/cuda_check.hpp"
#include "format/bf16.hpp"
#include "format/e2m1.hpp"
#include "format/e4m3.hpp"
#include "format/layouts.hpp"
#include "reference/cublaslt/lt_internal.hpp"

namespace metrale::reference::cublaslt {
namespace {

constexpr int kThreads = 256;
constexpr std::size_t kMaxBlocks = std::size_t{1} << 20;

unsigned blocks_for(std::size_t items) {
  return static_cast<unsigned>(
      std::clamp<std::size_t>((items + kThreads - 1) / kThreads, 1, kMaxBlocks));
}

// Each kernel moves whole vectors along K: 16 weights of one scale, 8 bf16 of a row.
void require_k_multiple(const char* op, int k, int multiple) {
  if (k % multiple != 0) {
    fail_message(Status::invalid_argument,
                 concat("cublaslt ", op, ": K = ", k, " is not a multiple of ", multiple));
  }
}

// One thread per block of 16 weights (one scale): 8 packed bytes in, 32 bf16 bytes out.
// Consecutive threads walk consecutive blocks of a row, so loads and stores coalesce.
__global__ void dequantize_kernel(const std::uint8_t* __restrict__ packed,
                                  const std::uint8_t* __restrict__ scale, bool sfb, float scale_2,
                                  std::uint16_t* __restrict__ out, int n, int k) {
  const std::size_t blocks_per_row = static_cast<std::size_t>(k) / 16;
  const std::size_t total = static_cast<std::size_t>(n) * blocks_per_row;
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < total;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    const std::size_t row = i / blocks_per_row;
    const std::size_t b = i % blocks_per_row;
    const uint2 codes =
        *reinterpret_cast<const uint2*>(packed + format::packed_nk_offset(row, b * 8, k));
    const std::uint8_t scale_byte =
        sfb ? scale[format::sfb_offset(row, b, k)] : scale[format::k16_by_n_offset(row, b, n)];
    const float block_scale = format::e4m3_to_float(scale_byte);
    std::uint32_t words[8];
    for (int w = 0; w < 8; ++w) {
      // Word w holds elements 2w (low half) and 2w+1; byte w of the 8 holds the same pair.
      const std::uint32_t word = w < 4 ? codes.x : codes.y;
      const std::uint8_t byte = static_cast<std::uint8_t>(word >> (8 * (w % 4)));
      const float even = format::e2m1_to_float(byte & 0xF) * block_scale * scale_2;
      const float odd = format::e2m1_to_float(byte >> 4) * block_scale * scale_2;
      words[w] = static_cast<std::uint32_t>(format::float_to_bf16(even)) |
                 (static_cast<std::uint32_t>(format::float_to_bf16(odd)) << 16);
    }
    uint4* dst = reinterpret_cast<uint4*>(out + row * k + b * 16);
    dst[0] = make_uint4(words[0], words[1], words[2], words[3]);
    dst[1] = make_uint4(words[4], words[5], words[6], words[7]);
  }
}

// One thread per 16-byte vector (8 bf16) of a gathered row.
__global__ void gather_kernel(const std::uint16_t* __restrict__ a, int a_rows,
                              const std::int32_t* __restrict__ token_ids, int rows, int k,
                              std::uint16_t* __restrict__ out) {
  const std::size_t vectors_per_row = static_cast<std::size_t>(k) / 8;
  const std::size_t total = static_cast<std::size_t>(rows) * vectors_per_row;
  const std::uint32_t nan_pair = 0x7FC07FC0u;
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < total;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    const std::size_t r = i / vectors_per_row;
    const std::size_t v = i % vectors_per_row;
    const std::int32_t token = token_ids[r];
    uint4 value = make_uint4(nan_pair, nan_pair, nan_pair, nan_pair);
    if (token >= 0 && (a_rows <= 0 || token < a_rows)) {  // a_rows <= 0: unchecked
      value = reinterpret_cast<const uint4*>(a + static_cast<std::size_t>(token) * k)[v];
    }
    reinterpret_cast<uint4*>(out + r * k)[v] = value;
  }
}

}  // namespace

void dequantize_nvfp4(const std::uint8_t* packed, const std::uint8_t* scale, ScaleLayout layout,
                      float scale_2, bf16_bits* out, int n, int k, void* stream) {
  require_k_multiple("dequantize_nvfp4", k, 16);
  if (n <= 0 || k <= 0) return;
  const std::size_t items = static_cast<std::size_t>(n) * (k / 16);
  dequantize_kernel<<<blocks_for(items), kThreads, 0, static_cast<cudaStream_t>(stream)>>>(
      packed, scale, layout == ScaleLayout::sfb, scale_2, out, n, k);
  METRALE_CUDA_CHECK_LAUNCH(dequantize_kernel);
}

void gather_rows(const bf16_bits* a, int a_rows, const std::int32_t* token_ids, int rows, int k,
                 bf16_bits* out, void* stream) {
  require_k_multiple("gather_rows", k, 8);
  if (rows <= 0 || k <= 0) return;
  const std::size_t items = static_cast<std::size_t>(rows) * (k / 8);
  gather_kernel<<<blocks_for(items), kThreads, 0, static_cast<cudaStream_t>(stream)>>>(
      a, a_rows, token_ids, rows, k, out);
  METRALE_CUDA_CHECK_LAUNCH(gather_kernel);
}

}  // namespace metrale::reference::cublaslt
