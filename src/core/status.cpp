// Status and backend names, and which backends this build contains (the METRALE_HAS_* gates
// come from cmake/dependencies.cmake).
#include "core/status.hpp"

namespace metrale::core {

const char* status_name(std::int32_t status) {
  switch (static_cast<Status>(status)) {
    case Status::ok: return "ok";
    case Status::invalid_argument: return "invalid_argument";
    case Status::unsupported: return "unsupported";
    case Status::not_built: return "not_built";
    case Status::cuda_error: return "cuda_error";
    case Status::workspace_too_small: return "workspace_too_small";
    case Status::internal: return "internal";
  }
  return "unknown_status";
}

bool is_backend(std::int32_t value) {
  return value >= static_cast<std::int32_t>(Backend::automatic) &&
         value <= static_cast<std::int32_t>(Backend::cublaslt);
}

}  // namespace metrale::core

namespace metrale {

const char* backend_name(Backend backend) {
  switch (backend) {
    case Backend::automatic: return "auto";
    case Backend::cpu: return "cpu";
    case Backend::cuda: return "cuda";
    case Backend::cutlass: return "cutlass";
    case Backend::cublaslt: return "cublaslt";
  }
  return "unknown";
}

bool backend_built(Backend backend) {
#ifdef METRALE_HAS_CUDA
  constexpr bool kCuda = true;
#else
  constexpr bool kCuda = false;
#endif
#ifdef METRALE_HAS_CUTLASS
  constexpr bool kCutlass = true;
#else
  constexpr bool kCutlass = false;
#endif
  switch (backend) {
    case Backend::cpu: return true;
    case Backend::automatic:  // automatic means our own CUDA kernels unless CUTLASS is asked for
    case Backend::cuda:
    case Backend::cublaslt: return kCuda;
    case Backend::cutlass: return kCutlass;
  }
  return false;
}

const char* version() {
  return METRALE_VERSION_STRING;
}

}  // namespace metrale
