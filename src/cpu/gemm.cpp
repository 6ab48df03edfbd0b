// CPU reference of the single GEMMs, out[M, N] = act[M, K] · weight[N, K]ᵀ on host memory:
// bf16 weights, and NVFP4 weights (packed [N, K/2], e4m3 scales in [K/16, N] or SFB, fp32
// scale_2). The activations become fp32 once; the weight is decoded a panel at a time inside
// detail::gemm_rows (fp64 accumulation, bf16 out). The footprint is checked first.
#include <fmt/format.h>

#include <vector>

#include "cpu/cpu_backend.hpp"
#include "cpu/footprint.hpp"
#include "cpu/gemm_core.hpp"
#include "format/layouts.hpp"

namespace metrale::cpu {
namespace {

// A row-major bf16 [rows, cols] matrix as the fp32 one detail::gemm_rows takes.
std::vector<float> to_float(const bf16_bits* src, std::int32_t rows, std::int32_t cols) {
  std::vector<float> dst(static_cast<std::size_t>(rows) * static_cast<std::size_t>(cols));
  detail::bf16_to_float(src, dst.size(), dst.data());
  return dst;
}

double product(std::int64_t a, std::int64_t b) {
  return static_cast<double>(a) * static_cast<double>(b);
}

std::string shape_of(std::int32_t m, std::int32_t n, std::int32_t k) {
  return fmt::format("M = {}, N = {}, K = {}", m, n, k);
}

}  // namespace

void bf16_gemm(const DenseGemm& args) {
  if (args.m <= 0) return;
  require_host_memory(shape_of(args.m, args.n, args.k),
                      {{"act", product(args.m, args.k) * 2},
                       {"weight", product(args.n, args.k) * 2},
                       {"out", product(args.m, args.n) * 2},
                       {"scratch", product(args.m, args.k) * 4 + detail::panel_scratch_bytes(args.k)}});
  const std::vector<float> act = to_float(args.act, args.m, args.k);
  detail::gemm_rows(act.data(), args.m, detail::bf16_rows(args.weight, args.k), args.n, args.k,
                    1.0f, args.out);
}

void nvfp4_gemm(const Nvfp4Gemm& args) {
  if (args.m <= 0) return;
  const double scale_bytes = args.scale_layout == ScaleLayout::sfb
                                 ? static_cast<double>(format::sfb_bytes(args.n, args.k))
                                 : product(args.n, args.k / 16);
  require_host_memory(shape_of(args.m, args.n, args.k),
                      {{"act", product(args.m, args.k) * 2},
                       {"weight_packed_t", product(args.n, args.k) / 2},
                       {"weight_scale_t", scale_bytes},
                       {"out", product(args.m, args.n) * 2},
                       {"scratch", product(args.m, args.k) * 4 + detail::panel_scratch_bytes(args.k)}});
  const std::vector<float> act = to_float(args.act, args.m, args.k);
  detail::gemm_rows(act.data(), args.m,
                    detail::nvfp4_rows(args.packed, args.scale, args.scale_layout,
                                       WeightLayout::packed, args.n, args.k),
                    args.n, args.k, args.scale_2, args.out);
}

}  // namespace metrale::cpu
