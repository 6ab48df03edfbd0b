// The body of every operation: validate -> select the backend -> resolve the workspace -> run.
// These throw metrale::Error; the C++ API (cpp_api.cpp) and the C ABI (c_abi*.cpp) turn that into
// a Result or a status. `who` is the name the caller used, so messages name the function called.
#pragma once

#include <string_view>

#include "metrale/metrale.hpp"

namespace metrale::api {

void run(std::string_view who, const DenseGemm& args, const Exec& exec);
void run(std::string_view who, const Nvfp4Gemm& args, const Exec& exec);
void run(std::string_view who, const PackNvfp4& args, const Exec& exec);
void run(std::string_view who, const SwizzleScales& args, const Exec& exec);
void run(std::string_view who, const TransposePacked& args, const Exec& exec);
void run(std::string_view who, const PrepackNvfp4& args, const Exec& exec);
void run(std::string_view who, const GroupedNvfp4& args, const Exec& exec);
void run(std::string_view who, const MoeForward& args, const Exec& exec);

// The seeds' cfg(test) hooks: the CUTLASS bf16 GEMM with a fixed tile, cuBLASLt with the n-th
// heuristic algorithm.
enum class CutlassTile { m128n256, m256n128, m64n128, m128n64, m64n64 };
void run_cutlass_tile(std::string_view who, const DenseGemm& args, const Exec& exec,
                      CutlassTile tile);
void run_cublaslt_algo(std::string_view who, const DenseGemm& args, const Exec& exec,
                       int algo_index, int* returned_count);

// The shared-workspace query of both APIs (metrale_workspace_get, metrale::shared_workspace):
// a CUDA-side backend without a usable device answers as every other call does (unsupported,
// "no CUDA device (<the runtime's error>)"), before the runtime is asked for a buffer.
void query_shared_workspace(std::string_view who, Backend backend, void** workspace,
                            std::size_t* workspace_size);

// The size queries: `bytes` is checked first, then the shape; the selected backend's need is
// written to *bytes.
void gemm_workspace_size(std::string_view who, Backend backend, int m, int n, int k,
                         std::size_t* bytes);
void grouped_workspace_size(std::string_view who, Backend backend, const ExpertGroups& groups,
                            int n, int k, int proj_count, std::size_t* bytes);
void moe_workspace_size(std::string_view who, Backend backend, const MoeLayer& layer,
                        int num_tokens, std::size_t* bytes);

}  // namespace metrale::api
