// Dispatch of the MoE layer (moe_forward): validate -> select the backend -> run. The CPU backend
// is the oracle; the CUDA backend runs the layer on the device (src/cuda/moe/), its token data
// checked on the host only when METRALE_MOE_CHECK_INPUTS=1 asks (the device makes a bad token's
// row NaN otherwise). The reference arms (cuBLASLt, CUTLASS) are GEMMs only: they refuse the
// layer, saying so.
#include <cstdint>
#include <vector>

#include "api/backends.hpp"
#include "api/dispatch.hpp"
#include "api/select.hpp"
#include "api/validate.hpp"
#include "core/config.hpp"
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

#ifdef METRALE_HAS_CUDA
// Device memory of `count` values, on the host (after the stream's queued work).
template <class T>
std::vector<T> host_copy(const void* device, std::size_t count, void* stream) {
  std::vector<T> host(count);
  if (count > 0) cuda::download(device, count * sizeof(T), host.data(), stream);
  return host;
}

// METRALE_MOE_CHECK_INPUTS=1: the token data the device would read (logits, or ids and weights,
// and the correction bias) comes to the host and meets the CPU backend's checks and messages.
void check_token_data_on_host(std::string_view who, const MoeForward& args, const Exec& exec) {
  cuda::refuse_capture(who, exec.stream,
                       "METRALE_MOE_CHECK_INPUTS = 1 reads the token data on the host");
  const MoeTokens& t = args.tokens;
  const std::size_t T = static_cast<std::size_t>(t.num_tokens),
                    E = static_cast<std::size_t>(args.layer.num_experts),
                    k = static_cast<std::size_t>(args.layer.top_k);
  MoeForward host = args;
  std::vector<float> logits32, weights, bias;
  std::vector<bf16_bits> logits16;
  std::vector<std::int32_t> ids;
  if (t.router_logits && t.logits_dtype == DType::f32) {
    logits32 = host_copy<float>(t.router_logits, T * E, exec.stream);
    host.tokens.router_logits = logits32.data();
  } else if (t.router_logits) {
    logits16 = host_copy<bf16_bits>(t.router_logits, T * E, exec.stream);
    host.tokens.router_logits = logits16.data();
  }
  if (t.topk_ids) {
    ids = host_copy<std::int32_t>(t.topk_ids, T * k, exec.stream);
    weights = host_copy<float>(t.topk_weights, T * k, exec.stream);
    host.tokens.topk_ids = ids.data();
    host.tokens.topk_weights = weights.data();
  }
  if (args.layer.correction_bias) {
    bias = host_copy<float>(args.layer.correction_bias, E, exec.stream);
    host.layer.correction_bias = bias.data();
  }
  validate_for_cpu(who, host);
}
#endif

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
  if (core::moe_check_inputs()) check_token_data_on_host(who, args, exec);
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
  validate_moe_token_count(who, layer, num_tokens);
  const Backend selected = select_backend(who, backend);
  if (selected == Backend::cpu) {
    *bytes = 0;  // the CPU backend keeps its scratch in host vectors
    return;
  }
  if (selected != Backend::cuda) refuse_reference_moe(who, selected);
#ifdef METRALE_HAS_CUDA
  cuda::refuse_moe_layer_beyond_limits(who, layer);  // the size of a layer the call would refuse
  *bytes = cuda::moe_workspace_size(layer, num_tokens);
#else
  no_dispatch(who, selected);
#endif
}

}  // namespace metrale::api
