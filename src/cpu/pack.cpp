// CPU reference of the packing operations, on host memory:
//   pack_nvfp4        bf16 weight [N, K] -> packed [N, K/2] (even k low nibble) + scale [K/16, N],
//                     the ModelOpt recipe of format/nvfp4_recipe.hpp (scale_2 = 1 when the caller
//                     asks for none, else amax / 2688, written back)
//   swizzle_scales    [K/16, N] or [N, K/16] scales -> SFB (format/layouts.hpp), padding zero
//   transpose_packed  [N, K/2] <-> [K/2, N], whole bytes (nibble pairs stay together)
//   prepack_nvfp4     [N, K/2] into or out of the prepacked layout (format/prepack.hpp), one
//                     16-bit half at a time, in place when src == dst
#include <algorithm>
#include <cstring>
#include <vector>

#include <fmt/format.h>

#include "core/config.hpp"
#include "cpu/cpu_backend.hpp"
#include "cpu/footprint.hpp"
#include "cpu/parallel.hpp"
#include "format/bf16.hpp"
#include "format/e2m1.hpp"
#include "format/fragment_order.hpp"
#include "format/layouts.hpp"
#include "format/nvfp4_recipe.hpp"
#include "format/prepack.hpp"

namespace metrale::cpu {
namespace {

// amax(|W|) over the whole tensor, NaN ignored (format::amax_update); max is order-independent.
float tensor_amax(const bf16_bits* weight, std::size_t N, std::size_t K) {
  std::vector<float> row_amax(N, 0.0f);
  parallel_for(N, 16, [&](std::size_t begin, std::size_t end) {
    for (std::size_t row = begin; row < end; ++row) {
      float amax = 0.0f;
      for (std::size_t i = 0; i < K; ++i)
        amax = format::amax_update(amax, format::bf16_to_float(weight[row * K + i]));
      row_amax[row] = amax;
    }
  });
  float amax = 0.0f;
  for (float value : row_amax) amax = format::amax_update(amax, value);
  return amax;
}

// Quantizes one row n: a scale byte per 16 elements, then a code per element.
void pack_row(const PackNvfp4& args, std::size_t row, float scale_2) {
  const std::size_t N = static_cast<std::size_t>(args.n), K = static_cast<std::size_t>(args.k);
  const bf16_bits* src = args.weight + row * K;
  for (std::size_t b = 0; b < K / format::kBlockSize; ++b) {
    float block[format::kBlockSize];
    float block_amax = 0.0f;
    for (int i = 0; i < format::kBlockSize; ++i) {
      block[i] = format::bf16_to_float(src[b * format::kBlockSize + i]);
      block_amax = format::amax_update(block_amax, block[i]);
    }
    const std::uint8_t sf = format::block_scale_e4m3(block_amax, scale_2);
    args.scale[format::k16_by_n_offset(row, b, N)] = sf;
    for (int j = 0; j < format::kBlockSize / 2; ++j) {
      const std::uint8_t even = format::quantize_to_e2m1(block[2 * j], sf, scale_2);
      const std::uint8_t odd = format::quantize_to_e2m1(block[2 * j + 1], sf, scale_2);
      args.packed[format::packed_nk_offset(row, b * 8 + j, K)] = format::pack_e2m1_pair(even, odd);
    }
  }
}

}  // namespace

void require_pack_memory(const PackNvfp4& args) {
  const double n = args.n, k = args.k;
  require_host_memory(fmt::format("N = {}, K = {}", args.n, args.k),
                      {{"weight_bf16", n * k * 2},
                       {"packed_t", n * k / 2},
                       {"scale_t", n * (args.k / 16)},
                       {"scratch", n * 4}});
}

void pack_nvfp4(const PackNvfp4& args) {
  const std::size_t N = static_cast<std::size_t>(args.n), K = static_cast<std::size_t>(args.k);
  const float scale_2 =
      args.scale_2_out ? format::scale_2_from_amax(tensor_amax(args.weight, N, K)) : 1.0f;
  parallel_for(N, 16, [&](std::size_t begin, std::size_t end) {
    for (std::size_t row = begin; row < end; ++row) pack_row(args, row, scale_2);
  });
  if (args.scale_2_out) *args.scale_2_out = scale_2;
}

void swizzle_scales(const SwizzleScales& args) {
  const std::size_t N = static_cast<std::size_t>(args.n), K = static_cast<std::size_t>(args.k);
  // Zero first: the padding rows (to 128) and columns (to 4) must read as scale 0, never garbage.
  std::memset(args.scale_out, 0, format::sfb_bytes(N, K));
  parallel_for(N, 64, [&](std::size_t begin, std::size_t end) {
    for (std::size_t row = begin; row < end; ++row) {
      for (std::size_t b = 0; b < K / 16; ++b) {
        const std::size_t from = args.src_n_major ? format::k16_by_n_offset(row, b, N)
                                                  : format::n_by_k16_offset(row, b, K);
        args.scale_out[format::sfb_offset(row, b, K)] = args.scale_in[from];
      }
    }
  });
}

void transpose_packed(const TransposePacked& args) {
  const std::size_t N = static_cast<std::size_t>(args.n), K = static_cast<std::size_t>(args.k);
  const bool to_kn = args.dir == TransposeDir::k_to_n;
  parallel_for(N, 64, [&](std::size_t begin, std::size_t end) {
    for (std::size_t row = begin; row < end; ++row) {
      for (std::size_t j = 0; j < K / 2; ++j) {
        const std::size_t nk = format::packed_nk_offset(row, j, K);
        const std::size_t kn = format::packed_kn_offset(row, j, N);
        if (to_kn) {
          args.dst[kn] = args.src[nk];
        } else {
          args.dst[nk] = args.src[kn];
        }
      }
    }
  });
}

void prepack_nvfp4(const PrepackNvfp4& args) {
  const double bytes = static_cast<double>(args.n) * (args.k / 2);
  require_host_memory(fmt::format("N = {}, K = {}", args.n, args.k),
                      {{"src", bytes}, {"dst", args.src == args.dst ? 0.0 : bytes}});
  const bool to_prepacked = args.dir == PrepackDir::to_prepacked;
  if (core::prepacked_layout() == core::PrepackedLayout::fragments) {
    const std::size_t k = static_cast<std::size_t>(args.k), row_bytes = k / 2;
    parallel_for(static_cast<std::size_t>(args.n), 64, [&](std::size_t begin, std::size_t end) {
      for (std::size_t row = begin; row < end; ++row) {
        const std::uint8_t* src = args.src + row * row_bytes;
        std::uint8_t* dst = args.dst + row * row_bytes;
        if (to_prepacked)
          format::convert_fragment_row<true>(src, dst, k);
        else
          format::convert_fragment_row<false>(src, dst, k);
      }
    });
    return;
  }
  const std::size_t halves =
      static_cast<std::size_t>(args.n) * static_cast<std::size_t>(args.k) / 4;
  const auto convert = to_prepacked ? format::prepack_half : format::unprepack_half;
  parallel_for(halves, std::size_t{1} << 16, [&](std::size_t begin, std::size_t end) {
    format::convert_halves(args.src + 2 * begin, args.dst + 2 * begin, end - begin, convert);
  });
}

}  // namespace metrale::cpu
