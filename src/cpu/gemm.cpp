// CPU reference of the single GEMMs, out[M, N] = act[M, K] · weight[N, K]ᵀ on host memory:
// bf16 weights, and NVFP4 weights (packed [N, K/2], e4m3 scales in [K/16, N] or SFB, fp32
// scale_2). Both decode to fp32 and go through detail::gemm_rows (fp64 accumulation, bf16 out).
#include <vector>

#include "cpu/cpu_backend.hpp"
#include "cpu/gemm_core.hpp"

namespace metrale::cpu {

void bf16_gemm(const DenseGemm& args) {
  if (args.m <= 0) return;
  const std::size_t K = static_cast<std::size_t>(args.k);
  std::vector<float> act(static_cast<std::size_t>(args.m) * K);
  std::vector<float> weight(static_cast<std::size_t>(args.n) * K);
  detail::bf16_to_float(args.act, act.size(), act.data());
  detail::bf16_to_float(args.weight, weight.size(), weight.data());
  detail::gemm_rows(act.data(), args.m, weight.data(), args.n, args.k, 1.0f, args.out);
}

void nvfp4_gemm(const Nvfp4Gemm& args) {
  if (args.m <= 0) return;
  const std::size_t K = static_cast<std::size_t>(args.k);
  std::vector<float> act(static_cast<std::size_t>(args.m) * K);
  std::vector<float> weight(static_cast<std::size_t>(args.n) * K);
  detail::bf16_to_float(args.act, act.size(), act.data());
  detail::decode_nvfp4_weight(args.packed, args.scale, args.scale_layout, args.n, args.k,
                              weight.data());
  detail::gemm_rows(act.data(), args.m, weight.data(), args.n, args.k, args.scale_2, args.out);
}

}  // namespace metrale::cpu
