// The cuBLASLt reference arm: dense bf16 GEMM through cuBLASLt (with algorithm enumeration for
// the bench), and NVFP4 through "dequantize to bf16, then cuBLASLt" — the naive path our kernels
// must beat. Arguments arrive validated, on device memory.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/workspace.hpp"
#include "metrale/metrale.hpp"

namespace metrale::reference::cublaslt {

// algo_index < 0: cuBLASLt's first heuristic choice. Otherwise the algo_index-th of the
// heuristics returned; *returned_count (if non-null) receives how many there were.
void bf16_gemm(const DenseGemm& args, core::Buffer ws, void* stream, int algo_index = -1,
               int* returned_count = nullptr);
void nvfp4_gemm(const Nvfp4Gemm& args, core::Buffer ws, void* stream);
void nvfp4_grouped(const GroupedNvfp4& args, core::Buffer ws, void* stream);

std::size_t gemm_workspace_size(int m, int n, int k);
std::size_t nvfp4_grouped_workspace_size(const ExpertGroups& groups, int n, int k, int proj_count);

// cuBLASLt's recommended workspace on Hopper (the bench gives its cuBLASLt arm this much).
inline constexpr std::size_t kLtWorkspaceBytes = std::size_t{32} << 20;

// The two kernels of the naive NVFP4 path, also what the bench builds its bf16 opponents' weights
// and rows with. Device memory only.
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
