// Shared pieces of the cuBLASLt reference arm: workspace carving constants and the two kernels
// of the naive NVFP4 path (dequantize a weight to bf16, gather activation rows). The bench uses
// dequantize_nvfp4 too, to build the bf16 weights its cuBLAS opponents read. Device memory only.
#pragma once

#include <cstddef>
#include <cstdint>

#include "cuda/cuda_backend.hpp"
#include "metrale/metrale.hpp"

namespace metrale::reference::cublaslt {

// cuBLASLt's recommended workspace on Hopper; every region we carve is 256-byte aligned (the
// alignment cuBLASLt assumes by default for its operands).
inline constexpr std::size_t kLtWorkspaceBytes = std::size_t{32} << 20;
inline constexpr std::size_t kWorkspaceAlign = 256;

inline std::size_t aligned_bytes(std::size_t bytes) {
  return (bytes + kWorkspaceAlign - 1) / kWorkspaceAlign * kWorkspaceAlign;
}

// The workspace with its start rounded up to kWorkspaceAlign (empty when nothing is left).
cuda::Workspace align_workspace(cuda::Workspace ws);

// bf16 weight [N, K] (row-major) from packed [N, K/2] e2m1 pairs and e4m3 block scales in
// `layout` ([K/16, N] or SFB): w = bf16_rne(float(e2m1 · e4m3) · scale_2). The product e2m1·e4m3
// is exact; the multiply by scale_2 rounds once in fp32 and the store rounds again to bf16. Our
// own kernels instead keep e2m1·e4m3 exact in bf16 and apply scale_2 to the fp32 accumulator, so
// the two paths differ by up to one bf16 rounding (2^-9 relative) per weight: compare them with
// a tolerance, never bit for bit. Requires K % 16 == 0 and 16-byte aligned pointers.
void dequantize_nvfp4(const std::uint8_t* packed, const std::uint8_t* scale, ScaleLayout layout,
                      float scale_2, bf16_bits* out, int n, int k, void* stream);

// out[r, :] = a[token_ids[r], :] for r < rows (token_ids on the device). A token id outside
// [0, a_rows) writes a row of NaN, so a bad id shows in the result instead of reading out of
// bounds. Requires K % 8 == 0 and 16-byte aligned pointers.
void gather_rows(const bf16_bits* a, int a_rows, const std::int32_t* token_ids, int rows, int k,
                 bf16_bits* out, void* stream);

}  // namespace metrale::reference::cublaslt
