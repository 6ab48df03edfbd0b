// metrale::cuda::swizzle_scales: e4m3 block scales into the 128x4 SFB layout of
// format/layouts.hpp (sfb_offset), from [K/16, N] (src_n_major) or [N, K/16]. The whole output
// (sfb_bytes(N, K)) is zeroed first, because the padding rows (to 128) and scale columns (to 4)
// must read as 0 and uninitialised padding has put NaNs into real outputs; then one thread per
// scale copies it to its swizzled place, threads ordered along the source so that reads
// coalesce. Offline work (1/32 of the weight bytes), so simple beats clever. Any arch.
#include <cuda_runtime.h>

#include <cstdint>

#include "cuda/cuda_backend.hpp"
#include "cuda/cuda_check.hpp"
#include "cuda/pack/pack_launch.hpp"
#include "cuda/require_device.hpp"
#include "format/layouts.hpp"

namespace metrale::cuda {
namespace {

constexpr const char* kWho = "pack_weight_sfb";
constexpr int kThreads = 256;

__global__ void __launch_bounds__(kThreads)
    swizzle_kernel(const std::uint8_t* __restrict__ in, std::uint8_t* __restrict__ out,
                   std::int64_t n, std::int64_t k, bool src_n_major) {
  const std::int64_t blocks_per_row = k / 16;
  const std::int64_t count = n * blocks_per_row;
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < count;
       i += stride) {
    // i is the source index: [K/16, N] walks n fastest, [N, K/16] walks b fastest.
    const std::int64_t row = src_n_major ? i % n : i / blocks_per_row;
    const std::int64_t b = src_n_major ? i / n : i % blocks_per_row;
    out[format::sfb_offset(static_cast<std::size_t>(row), static_cast<std::size_t>(b),
                           static_cast<std::size_t>(k))] = in[i];
  }
}

}  // namespace

void swizzle_scales(const SwizzleScales& args, void* stream) {
  require_device(kWho);
  if (args.n <= 0 || args.k <= 0) return;
  const auto s = static_cast<cudaStream_t>(stream);
  const std::size_t n = static_cast<std::size_t>(args.n), k = static_cast<std::size_t>(args.k);
  METRALE_CUDA_CHECK(cudaMemsetAsync(args.scale_out, 0, format::sfb_bytes(n, k), s));
  const std::size_t count = n * (k / 16);
  if (count == 0) return;
  const unsigned grid = pack::grid_size(count, kThreads, 8);
  swizzle_kernel<<<grid, kThreads, 0, s>>>(args.scale_in, args.scale_out, args.n, args.k,
                                           args.src_n_major);
  METRALE_CUDA_CHECK_LAUNCH(swizzle_kernel);
}

}  // namespace metrale::cuda
