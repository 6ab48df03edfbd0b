// Dispatch of the MoE layer (moe_forward): validate -> select the backend -> run. Only the CPU
// backend runs it today. The CUDA kernels of issue 9 (routing + grouping, gate/up + activation,
// down + combine) do not exist yet, so every CUDA-side backend refuses, before asking for a
// device, with a message that says so: nothing pretends to run on the GPU.
#include "api/backends.hpp"
#include "api/dispatch.hpp"
#include "api/select.hpp"
#include "api/validate.hpp"
#include "core/error.hpp"
#include "core/validate.hpp"

namespace metrale::api {

namespace {

[[noreturn]] void refuse_device_moe(std::string_view who, Backend backend) {
  fail(Status::unsupported,
       "{}: the CUDA MoE layer is not implemented yet (issue 9): the {} backend cannot run it; "
       "use the CPU backend",
       who, backend_name(backend));
}

}  // namespace

void run(std::string_view who, const MoeForward& args, const Exec& exec) {
  validate(who, args);
  const Backend backend = select_backend(who, exec.backend);
  if (backend != Backend::cpu) refuse_device_moe(who, backend);
  validate_for_cpu(who, args);
  cpu::moe_forward(args);
}

void moe_workspace_size(std::string_view who, Backend backend, const MoeLayer& layer,
                        int num_tokens, std::size_t* bytes) {
  core::require_not_null(who, "bytes", bytes);
  validate_moe_layer(who, layer);
  core::require_non_negative(who, "num_tokens", num_tokens);
  const Backend selected = select_backend(who, backend);
  if (selected != Backend::cpu) refuse_device_moe(who, selected);
  *bytes = 0;  // the CPU backend keeps its scratch in host vectors
}

}  // namespace metrale::api
