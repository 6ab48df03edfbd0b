// metrale::cuda::transpose_packed: the packed e2m1 weight between [N, K/2] and [K/2, N]
// (format/layouts.hpp packed_nk_offset / packed_kn_offset), whole bytes, so each nibble pair
// (two consecutive k) stays together. Both directions are one byte-matrix transpose
// src [rows, cols] -> dst [cols, rows] through a 32x32 shared-memory tile: reads and writes both
// walk contiguous bytes. Any arch.
#include <cuda_runtime.h>

#include <cstdint>

#include "cuda/cuda_backend.hpp"
#include "cuda/cuda_check.hpp"
#include "cuda/pack/pack_launch.hpp"
#include "cuda/require_device.hpp"

namespace metrale::cuda {
namespace {

constexpr const char* kWho = "transpose_nvfp4_packed";
constexpr int kTile = 32;
constexpr int kRowsPerPass = 8;  // blockDim = (32, 8): each thread moves 4 bytes of a tile

__global__ void __launch_bounds__(kTile* kRowsPerPass)
    transpose_kernel(const std::uint8_t* __restrict__ src, std::uint8_t* __restrict__ dst,
                     std::int64_t rows, std::int64_t cols) {
  // +4 columns: the column-wise reads of the second phase spread over banks.
  __shared__ std::uint8_t tile[kTile][kTile + 4];
  const std::int64_t row_tiles = (rows + kTile - 1) / kTile;
  const std::int64_t col_tiles = (cols + kTile - 1) / kTile;
  for (std::int64_t t = blockIdx.x; t < row_tiles * col_tiles; t += gridDim.x) {
    const std::int64_t r0 = t / col_tiles * kTile, c0 = t % col_tiles * kTile;
    for (int y = threadIdx.y; y < kTile; y += kRowsPerPass) {
      const std::int64_t r = r0 + y, c = c0 + threadIdx.x;
      if (r < rows && c < cols) tile[y][threadIdx.x] = src[r * cols + c];
    }
    __syncthreads();
    // dst[c, r] = src[r, c]: threadIdx.x now walks r, contiguous in dst.
    for (int y = threadIdx.y; y < kTile; y += kRowsPerPass) {
      const std::int64_t c = c0 + y, r = r0 + threadIdx.x;
      if (r < rows && c < cols) dst[c * rows + r] = tile[threadIdx.x][y];
    }
    __syncthreads();
  }
}

}  // namespace

void transpose_packed(const TransposePacked& args, void* stream) {
  require_device(kWho);
  if (args.n <= 0 || args.k <= 0) return;
  const auto s = static_cast<cudaStream_t>(stream);
  // k_to_n reads [N, K/2]; n_to_k reads [K/2, N].
  const bool k_to_n = args.dir == TransposeDir::k_to_n;
  const std::int64_t rows = k_to_n ? args.n : args.k / 2;
  const std::int64_t cols = k_to_n ? args.k / 2 : args.n;
  const std::size_t tiles =
      static_cast<std::size_t>(((rows + kTile - 1) / kTile) * ((cols + kTile - 1) / kTile));
  const unsigned grid = pack::grid_size(tiles, 1, 8);
  transpose_kernel<<<grid, dim3(kTile, kRowsPerPass), 0, s>>>(args.src, args.dst, rows, cols);
  METRALE_CUDA_CHECK_LAUNCH(transpose_kernel);
}

}  // namespace metrale::cuda
