// The cuBLASLt reference arm: dense bf16 GEMM through cuBLASLt (with algorithm enumeration for
// the bench), and NVFP4 through "dequantize to bf16, then cuBLASLt" — the naive path our kernels
// must beat. Arguments arrive validated, on device memory.
#pragma once

#include "cuda/cuda_backend.hpp"
#include "metrale/metrale.hpp"

namespace metrale::reference::cublaslt {

// algo_index < 0: cuBLASLt's first heuristic choice. Otherwise the algo_index-th of the
// heuristics returned; *returned_count (if non-null) receives how many there were.
void bf16_gemm(const DenseGemm& args, cuda::Workspace ws, void* stream, int algo_index = -1,
               int* returned_count = nullptr);
void nvfp4_gemm(const Nvfp4Gemm& args, cuda::Workspace ws, void* stream);
void nvfp4_grouped(const GroupedNvfp4& args, cuda::Workspace ws, void* stream);

std::size_t gemm_workspace_size(int m, int n, int k);
std::size_t nvfp4_grouped_workspace_size(const ExpertGroups& groups, int n, int k, int proj_count);

}  // namespace metrale::reference::cublaslt
