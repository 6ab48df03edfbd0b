// The CUTLASS reference arm: the opponent our kernels are measured against, never a default
// path. Compiled only when CUTLASS headers are found (METRALE_HAS_CUTLASS); reached only through
// the metrale_cutlass_* entry points, Backend::cutlass, or dispatch with METRALE_CUTLASS_GEMM=1.
// Arguments arrive validated, on device memory.
#pragma once

#include "cuda/cuda_backend.hpp"
#include "metrale/metrale.hpp"

namespace metrale::reference::cutlass {

// Tile shapes of the Hopper warp-specialized bf16 GEMM (the seeds' test-hook variants).
enum class Tile { automatic, m128n256, m256n128, m64n128, m128n64, m64n64 };

void bf16_gemm(const DenseGemm& args, cuda::Workspace ws, void* stream,
               Tile tile = Tile::automatic);
void nvfp4_gemm(const Nvfp4Gemm& args, cuda::Workspace ws, void* stream);
void pack_nvfp4(const PackNvfp4& args, cuda::Workspace ws, void* stream);
void swizzle_scales(const SwizzleScales& args, void* stream);
void transpose_packed(const TransposePacked& args, void* stream);
void nvfp4_grouped(const GroupedNvfp4& args, cuda::Workspace ws, void* stream);

std::size_t nvfp4_grouped_workspace_size(const ExpertGroups& groups, int n, int k, int proj_count);
std::size_t gemm_workspace_size(int m, int n, int k);

}  // namespace metrale::reference::cutlass
