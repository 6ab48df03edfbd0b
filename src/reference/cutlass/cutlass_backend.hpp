// The CUTLASS reference arm: the opponent our kernels are measured against, never a default
// path. Compiled only when CUTLASS headers are found (METRALE_HAS_CUTLASS); reached only through
// the metrale_cutlass_* entry points, Backend::cutlass, or dispatch with METRALE_CUTLASS_GEMM=1.
// Arguments arrive validated, on device memory.
//
// What it runs (sm_90a only; another device gets Status::unsupported naming its arch):
//   bf16_gemm      CUTLASS 3.x warp-specialized TMA/wgmma GEMM, one kernel per Tile.
//   nvfp4_gemm     weight dequantized to bf16 in the workspace (e2m1 · e4m3, exact), then the bf16
//                  GEMM with alpha = scale_2 in its fp32 epilogue.
//   nvfp4_grouped  one CUTLASS kGrouped launch over every (projection, active expert), weights
//                  dequantized and gathered rows materialised in the workspace, per-group alpha.
//                  Host offsets only; not capturable in a CUDA graph.
//   pack_nvfp4, swizzle_scales, transpose_packed
//                  a second implementation from CUTLASS's converters and SFB layout.
//   nvfp4_w4a4_gemm_sm100
//                  Blackwell only (sm_100a, built with METRALE_CUTLASS_SM100=ON): the activation is
//                  quantized to NVFP4 too (W4A4 numerics: the block-scaled MMA needs FP4 on both
//                  operands), then CUTLASS's block-scaled GEMM. Cannot run on the H200; refused
//                  with Status::unsupported on anything but compute capability 10.0, and in a
//                  build without the option.
// Unsupported (Status::unsupported, the value named): N % 8 or K % 8 != 0 (TMA rows of 16
// bytes), act/weight/out not 16-byte aligned, packed weights not 8-byte aligned, device offsets.
#pragma once

#include "core/workspace.hpp"
#include "metrale/metrale.hpp"

namespace metrale::reference::cutlass {

// Tile shapes of the Hopper warp-specialized bf16 GEMM (the seeds' test-hook variants).
enum class Tile { automatic, m128n256, m256n128, m64n128, m128n64, m64n64 };

void bf16_gemm(const DenseGemm& args, core::Buffer ws, void* stream,
               Tile tile = Tile::automatic);
void nvfp4_gemm(const Nvfp4Gemm& args, core::Buffer ws, void* stream);
void pack_nvfp4(const PackNvfp4& args, core::Buffer ws, void* stream);
void swizzle_scales(const SwizzleScales& args, void* stream);
void transpose_packed(const TransposePacked& args, void* stream);
void nvfp4_grouped(const GroupedNvfp4& args, core::Buffer ws, void* stream);

// The bytes nvfp4_grouped carves for these host offsets (dequantized weights, gathered rows,
// staged per-group arrays, CUTLASS's workspace); 0 for device offsets (refused by the call).
std::size_t nvfp4_grouped_workspace_size(const ExpertGroups& groups, int n, int k, int proj_count);
// One bound for both dense GEMMs: the NVFP4 call's (its dequantized N x K bf16 weight plus
// CUTLASS's workspace); a bf16 call needs only CUTLASS's part (0 for these kernels).
std::size_t gemm_workspace_size(int m, int n, int k);

// out[M,N] = (q(act) · Wᵀ) · scale_2_act · scale_2, where q(act) is act quantized to NVFP4 by our
// recipe (format/nvfp4_recipe.hpp: scale_2_act = amax(|act|) / 2688, one e4m3 scale per 16
// elements, SFA = the SFB swizzle over the act's rows) and W the weight as given (either scale
// layout). Needs K % 32 == 0, N % 8 == 0, act/packed/scale/out 16-byte aligned.
void nvfp4_w4a4_gemm_sm100(const Nvfp4Gemm& args, core::Buffer ws, void* stream);
// Its workspace (quantized act, SFA, a swizzled copy of the weight's scales, CUTLASS's part);
// 0 in a build without METRALE_CUTLASS_SM100.
std::size_t nvfp4_w4a4_gemm_sm100_workspace_size(int m, int n, int k);

}  // namespace metrale::reference::cutlass
