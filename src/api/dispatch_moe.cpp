// Dispatch of the MoE layer (moe_forward): validate -> select the backend -> run. The CPU backend
// is the oracle; the CUDA backend runs the layer on the device (src/cuda/moe/). The reference
// arms (cuBLASLt, CUTLASS) are GEMMs only: they refuse the layer, saying so.
#include "api/backends.hpp"
#include "api/dispatch.hpp"
#include "api/select.hpp"
#include "api/validate.hpp"
#include "core/error.hpp"
#include "core/validate.hpp"

namespace metrale::api {

namespace {

[[noreturn]] void refuse_reference_moe(std::string_view who, Backend backend) {
  fail(Status::unsupported,
       "{}: the {} backend is a reference GEMM and does not run the MoE layer; use the cuda or "
       "cpu backend",
       who, backend_name(backend));
}

}  // namespace

void run(std::string_view who, const MoeForward& args, const Exec& exec) {
  validate(who, args);
  const Backend backend = select_backend(who, exec.backend);
  if (backend == Backend::cpu) {
    validate_for_cpu(who, args);
    return cpu::moe_forward(args);
  }
  if (backend != Backend::cuda) refuse_reference_moe(who, backend);
#ifdef METRALE_HAS_CUDA
  cuda::refuse_moe_beyond_limits(who, args);
  if (args.tokens.num_tokens == 0) return;
  require_device(who, backend);
  const core::Buffer ws =
      select_workspace(who, exec, cuda::moe_workspace_size(args.layer, args.tokens.num_tokens));
  cuda::moe_forward(who, args, ws, exec.stream);
#else
  no_dispatch(who, backend);
#endif
}

void moe_workspace_size(std::string_view who, Backend backend, const MoeLayer& layer,
                        int num_tokens, std::size_t* bytes) {
  core::require_not_null(who, "bytes", bytes);
  validate_moe_layer(who, layer);
  core::require_non_negative(who, "num_tokens", num_tokens);
  const Backend selected = select_backend(who, backend);
  if (selected == Backend::cpu) {
    *bytes = 0;  // the CPU backend keeps its scratch in host vectors
    return;
  }
  if (selected != Backend::cuda) refuse_reference_moe(who, selected);
#ifdef METRALE_HAS_CUDA
  *bytes = cuda::moe_workspace_size(layer, num_tokens);
#else
  no_dispatch(who, selected);
#endif
}

}  // namespace metrale::api
