// Which backend runs a call, and with which workspace.
//   Backend::automatic -> our own CUDA kernels; the CUTLASS reference only when
//                         METRALE_CUTLASS_GEMM=1 (never a default path).
//   cpu / cuda / cutlass / cublaslt -> that backend, or Status::not_built when it was not compiled.
// Workspace: a caller's buffer is used as given (Status::workspace_too_small if it is smaller than
// the backend's *_workspace_size); a null workspace with size 0 selects the shared workspace,
// allocated on first use only when the call needs scratch.
#pragma once

#include <cstddef>
#include <string_view>

#include "core/workspace.hpp"
#include "metrale/metrale.hpp"

namespace metrale::api {

Backend select_backend(std::string_view who, Backend requested);

// Throws Status::unsupported with the reason when the chosen CUDA-side backend has no device it
// can run on (for Backend::cuda: also an arch its kernels were built for).
void require_device(std::string_view who, Backend backend);

// Selection has already refused backends that are not built; this is the impossible rest of a
// dispatch switch (Status::internal).
[[noreturn]] void no_dispatch(std::string_view who, Backend backend);

// The shared workspace of `backend`, its errors prefixed with `who`.
core::Buffer shared_workspace_for(std::string_view who, Backend backend);
// The shared-workspace query of both APIs: checks the out pointers, selects the backend and
// writes its shared buffer.
void get_shared_workspace(std::string_view who, Backend backend, void** workspace,
                          std::size_t* workspace_size);

// The workspace for a call that needs `needed` bytes.
core::Buffer select_workspace(std::string_view who, const Exec& exec, std::size_t needed);

// Bytes of workspace each backend needs (backend already selected).
std::size_t gemm_workspace_bytes(Backend backend, int m, int n, int k);
std::size_t grouped_workspace_bytes(Backend backend, const ExpertGroups& groups, int n, int k,
                                    int proj_count);

}  // namespace metrale::api
