// Backend selection and workspace resolution (see select.hpp). The reference arms are referenced
// only under their build gates (backends.hpp).
#include "api/select.hpp"

#include <string>

#include "api/backends.hpp"
#include "core/config.hpp"
#include "core/device.hpp"
#include "core/error.hpp"
#include "core/status.hpp"
#include "core/validate.hpp"
#include "core/workspace.hpp"

namespace metrale::api {

namespace {

constexpr std::size_t kWorkspaceAlignment = 16;  // what vectorised kernels may assume

[[noreturn]] void cutlass_not_built(std::string_view who, std::string_view how) {
  fail(Status::not_built,
       "{}: {}CUTLASS support was not built; set CUTLASS_HOME or pip install nvidia-cutlass and "
       "rebuild",
       who, how);
}

}  // namespace

Backend select_backend(std::string_view who, Backend requested) {
  METRALE_REQUIRE(core::is_backend(static_cast<std::int32_t>(requested)),
                  "{}: backend = {}, expected 0 (auto), 1 (cpu), 2 (cuda), 3 (cutlass) or 4 "
                  "(cublaslt)",
                  who, static_cast<std::int32_t>(requested));
  Backend backend = requested;
  if (backend == Backend::automatic) {
    if (core::cutlass_gemm_enabled()) {
      if (!backend_built(Backend::cutlass)) cutlass_not_built(who, "METRALE_CUTLASS_GEMM=1, but ");
      return Backend::cutlass;
    }
    backend = Backend::cuda;
  }
  if (!backend_built(backend)) {
    switch (backend) {
      case Backend::cutlass: cutlass_not_built(who, "");
      case Backend::cublaslt:
        fail(Status::not_built,
             "{}: the cuBLASLt backend was not built (it needs the CUDA "
             "toolkit; build with METRALE_CUDA=ON)",
             who);
      default: fail(Status::not_built, "{}: the CUDA backend was not built", who);
    }
  }
  return backend;
}

void require_device(std::string_view who, Backend backend) {
  std::string why;
  bool ok = true;
#ifdef METRALE_HAS_CUDA
  ok = backend == Backend::cuda ? cuda::available(&why) : core::cuda_device_present(&why);
#endif
  if (!ok)
    fail(Status::unsupported, "{}: the {} backend cannot run here: {}", who, backend_name(backend),
         why);
}

void no_dispatch(std::string_view who, Backend backend) {
  fail(Status::internal, "{}: no dispatch for backend {}", who, backend_name(backend));
}

core::Buffer shared_workspace_for(std::string_view who, Backend backend) {
  try {
    return core::shared_workspace(backend);
  } catch (const Error& e) {
    fail(e.status(), "{}: {}", who, e.what());
  }
}

void get_shared_workspace(std::string_view who, Backend backend, void** workspace,
                          std::size_t* workspace_size) {
  core::require_not_null(who, "workspace", workspace);
  core::require_not_null(who, "workspace_size", workspace_size);
  const core::Buffer buffer = shared_workspace_for(who, select_backend(who, backend));
  *workspace = buffer.ptr;
  *workspace_size = buffer.size;
}

core::Buffer select_workspace(std::string_view who, const Exec& exec, std::size_t needed) {
  if (exec.workspace == nullptr && exec.workspace_size == 0) {
    if (needed == 0) return {};
    // Only CUDA-side backends ask for a workspace; they share the current device's buffer.
    const core::Buffer shared = shared_workspace_for(who, Backend::cuda);
    if (shared.size < needed) {
      fail(Status::workspace_too_small,
           "{}: needs {} bytes of workspace, the shared workspace has {} bytes (raise "
           "METRALE_WORKSPACE_MB or pass a workspace)",
           who, needed, shared.size);
    }
    return {shared.ptr, shared.size};
  }
  METRALE_REQUIRE(exec.workspace != nullptr,
                  "{}: workspace is null with workspace_size = {}, expected a buffer of that size "
                  "(or size 0 for the shared workspace)",
                  who, exec.workspace_size);
  core::require_aligned(who, "workspace", exec.workspace, kWorkspaceAlignment, "device scratch");
  if (exec.workspace_size < needed) {
    fail(Status::workspace_too_small, "{}: workspace_size = {} bytes < {} bytes needed", who,
         exec.workspace_size, needed);
  }
  return {exec.workspace, exec.workspace_size};
}

std::size_t gemm_workspace_bytes(Backend backend, int m, int n, int k) {
  switch (backend) {
#ifdef METRALE_HAS_CUTLASS
    case Backend::cutlass: return reference::cutlass::gemm_workspace_size(m, n, k);
#endif
#ifdef METRALE_HAS_CUDA
    case Backend::cuda: return cuda::gemm_workspace_size(m, n, k);
    case Backend::cublaslt: return reference::cublaslt::gemm_workspace_size(m, n, k);
#endif
    default: return 0;  // the CPU backend needs no scratch
  }
}

std::size_t grouped_workspace_bytes(Backend backend, const ExpertGroups& groups, int n, int k,
                                    int proj_count) {
  switch (backend) {
#ifdef METRALE_HAS_CUDA
    case Backend::cuda: return cuda::nvfp4_grouped_workspace_size(groups, n, k, proj_count);
    case Backend::cublaslt:
      return reference::cublaslt::nvfp4_grouped_workspace_size(groups, n, k, proj_count);
#endif
#ifdef METRALE_HAS_CUTLASS
    case Backend::cutlass:
      return reference::cutlass::nvfp4_grouped_workspace_size(groups, n, k, proj_count);
#endif
    default: return 0;
  }
}

}  // namespace metrale::api
