// CPU reference of the single GEMMs, out[M, N] = act[M, K] · weight[N, K]ᵀ on host memory:
// bf16 weights, and NVFP4 weights (packed [N, K/2], e4m3 scales in [K/16, N] or SFB, fp32
// scale_2). Both decode to fp32 and go through detail::gemm_rows (fp64 accumulation, bf16 out).
#include <vector>

#include "cpu/cpu_backend.hpp"
#include "cpu/gemm_core.hpp"

namespace metrale::cpu {
namespace {

// A row-major bf16 [rows, cols] matrix as the fp32 one detail::gemm_rows takes.
std::vector<float> to_float(const bf16_bits* src, std::int32_t rows, std::int32_t cols) {
  std::vector<float> dst(static_cast<std::size_t>(rows) * static_cast<std::size_t>(cols));
  detail::bf16_to_float(src, dst.size(), dst.data());
  return dst;
}

}  // namespace

void bf16_gemm(const DenseGemm& args) {
  if (args.m <= 0) return;
  const std::vector<float> act = to_float(args.act, args.m, args.k);
  const std::vector<float> weight = to_float(args.weight, args.n, args.k);
  detail::gemm_rows(act.data(), args.m, weight.data(), args.n, args.k, 1.0f, args.out);
}

void nvfp4_gemm(const Nvfp4Gemm& args) {
  if (args.m <= 0) return;
  const std::vector<float> act = to_float(args.act, args.m, args.k);
  std::vector<float> weight(static_cast<std::size_t>(args.n) * static_cast<std::size_t>(args.k));
  detail::decode_nvfp4_weight(args.packed, args.scale, args.scale_layout, args.n, args.k,
                              weight.data());
  detail::gemm_rows(act.data(), args.m, weight.data(), args.n, args.k, args.scale_2, args.out);
}

}  // namespace metrale::cpu
