// metrale::cuda::prepack_nvfp4: packed [N, K/2] bytes into or out of the prepacked layout
// (format/prepack.hpp). The layout moves bits within each 16-bit half of a row, and a row's K/2
// bytes are a whole number of 32-bit words, so the buffer is a flat array of units that convert
// on their own: one thread converts a word (two halves) at a time with format::prepack_word /
// unprepack_word when both pointers are 4-byte aligned; otherwise (a byte offset the caller chose:
// the packing operations take any byte pointer) a half at a time, read and written as two bytes.
// Each thread reads its unit before it writes it, so src == dst converts in place. Offline work
// (once per weight at load), memory bound; simple beats clever. Any arch.
// In the fragment order (format/fragment_order.hpp: the default, unless
// METRALE_PREPACKED_LAYOUT=halves) codes also move within each 64-code group of a row, and each
// word of a group has its own bit layout: one thread converts a group (or a row's tail, in
// halves) at a time.
#include <cuda_runtime.h>

#include <cstdint>

#include "core/config.hpp"
#include "cuda/cuda_backend.hpp"
#include "cuda/cuda_check.hpp"
#include "cuda/pack/pack_launch.hpp"
#include "cuda/require_device.hpp"
#include "format/fragment_order.hpp"
#include "format/prepack.hpp"

namespace metrale::cuda {
namespace {

constexpr const char* kWho = "prepack_nvfp4";
constexpr int kThreads = 256;

// No __restrict__: src and dst may be the same buffer.
template <PrepackDir kDir>
__global__ void __launch_bounds__(kThreads)
    prepack_words(const std::uint32_t* src, std::uint32_t* dst, std::int64_t words) {
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < words;
       i += stride) {
    const std::uint32_t w = src[i];
    dst[i] = kDir == PrepackDir::to_prepacked ? format::prepack_word(w) : format::unprepack_word(w);
  }
}

template <PrepackDir kDir>
__global__ void __launch_bounds__(kThreads)
    prepack_halves(const std::uint8_t* src, std::uint8_t* dst, std::int64_t halves) {
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x;
       i < halves; i += stride) {
    format::convert_halves(src + 2 * i, dst + 2 * i, 1, [](std::uint16_t half) {
      return kDir == PrepackDir::to_prepacked ? format::prepack_half(half)
                                              : format::unprepack_half(half);
    });
  }
}

bool aligned_4(const void* ptr) {
  return reinterpret_cast<std::uintptr_t>(ptr) % sizeof(std::uint32_t) == 0;
}

template <PrepackDir kDir>
void launch(const PrepackNvfp4& args, std::int64_t bytes, cudaStream_t stream) {
  if (aligned_4(args.src) && aligned_4(args.dst)) {
    const std::int64_t words = bytes / 4;
    const unsigned grid = pack::grid_size(static_cast<std::size_t>(words), kThreads, 8);
    prepack_words<kDir>
        <<<grid, kThreads, 0, stream>>>(reinterpret_cast<const std::uint32_t*>(args.src),
                                        reinterpret_cast<std::uint32_t*>(args.dst), words);
    METRALE_CUDA_CHECK_LAUNCH(prepack_words);
    return;
  }
  const std::int64_t halves = bytes / 2;
  const unsigned grid = pack::grid_size(static_cast<std::size_t>(halves), kThreads, 8);
  prepack_halves<kDir><<<grid, kThreads, 0, stream>>>(args.src, args.dst, halves);
  METRALE_CUDA_CHECK_LAUNCH(prepack_halves);
}

// The fragment order: thread unit i converts unit i % units of row i / units (a whole group, or
// the row's K % 64 tail: format::convert_fragment_unit).
template <PrepackDir kDir>
__global__ void __launch_bounds__(kThreads)
    prepack_fragment_units(const std::uint8_t* src, std::uint8_t* dst, std::int64_t rows, int k) {
  const std::int64_t units = static_cast<std::int64_t>(format::fragment_units(k));
  const std::int64_t row_bytes = k / 2;
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x;
       i < rows * units; i += stride) {
    const std::int64_t row = i / units;
    format::convert_fragment_unit<kDir == PrepackDir::to_prepacked>(
        src + row * row_bytes, dst + row * row_bytes, k, static_cast<std::size_t>(i % units));
  }
}

template <PrepackDir kDir>
void launch_fragments(const PrepackNvfp4& args, cudaStream_t stream) {
  const std::int64_t units =
      static_cast<std::int64_t>(args.n) * static_cast<std::int64_t>(format::fragment_units(args.k));
  const unsigned grid = pack::grid_size(static_cast<std::size_t>(units), kThreads, 8);
  prepack_fragment_units<kDir><<<grid, kThreads, 0, stream>>>(args.src, args.dst, args.n, args.k);
  METRALE_CUDA_CHECK_LAUNCH(prepack_fragment_units);
}

}  // namespace

void prepack_nvfp4(const PrepackNvfp4& args, void* stream) {
  require_device(kWho);
  // K is a multiple of 16 (validated): every row is K/2 bytes, a whole number of words.
  const std::int64_t bytes = static_cast<std::int64_t>(args.n) * (args.k / 2);
  if (bytes <= 0) return;
  const auto s = static_cast<cudaStream_t>(stream);
  if (core::prepacked_layout() == core::PrepackedLayout::fragments) {
    if (args.dir == PrepackDir::to_prepacked)
      launch_fragments<PrepackDir::to_prepacked>(args, s);
    else
      launch_fragments<PrepackDir::to_packed>(args, s);
    return;
  }
  if (args.dir == PrepackDir::to_prepacked) {
    launch<PrepackDir::to_prepacked>(args, bytes, s);
  } else {
    launch<PrepackDir::to_packed>(args, bytes, s);
  }
}

}  // namespace metrale::cuda
