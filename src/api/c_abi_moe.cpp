// The C ABI of the MoE layer: metrale_moe_forward and metrale_moe_workspace_size. The caller's
// versioned structs (metrale_moe_layer, metrale_moe_tokens) are read up to their struct_size,
// then translated field for field into the C++ API's MoeLayer and MoeTokens.
#include "api/c_abi_common.hpp"
#include "core/validate.hpp"

namespace api = metrale::api;
namespace core = metrale::core;

namespace {

metrale::ExpertWeights weights(const metrale_expert_weights& w) {
  return {w.packed_ptrs, w.scale_ptrs, w.scale2_vals};
}

// ABI 1 is the first layout of both structs: nothing shorter is accepted.
template <class T>
T read_struct(std::string_view who, std::string_view name, std::string_view type,
              std::string_view init, const T* in, const T& defaults) {
  core::require_not_null(who, name, in);
  return api::read_versioned(who, name, type, init, in, sizeof(T), defaults);
}

metrale::MoeLayer read_layer(std::string_view who, const metrale_moe_layer* in) {
  const metrale_moe_layer l =
      read_struct(who, "layer", "metrale_moe_layer", "METRALE_MOE_LAYER_INIT", in,
                  metrale_moe_layer METRALE_MOE_LAYER_INIT);
  metrale::MoeLayer out;
  out.num_experts = l.num_experts;
  out.num_local_experts = l.num_local_experts;
  out.hidden_size = l.hidden_size;
  out.intermediate_size = l.intermediate_size;
  out.top_k = l.top_k;
  const api::LayoutFlags layouts =
      api::read_layout_flags(who, "layer->scale_layout", l.scale_layout);
  out.scale_layout = layouts.scale;
  out.weight_layout = layouts.weights;
  out.gate = weights(l.gate);
  out.up = weights(l.up);
  out.down = weights(l.down);
  out.gate_bias_ptrs = l.gate_bias_ptrs;
  out.up_bias_ptrs = l.up_bias_ptrs;
  out.down_bias_ptrs = l.down_bias_ptrs;
  out.expert_map = l.expert_map;
  out.activation = static_cast<metrale::MoeActivation>(l.activation);
  out.swiglu_alpha = l.swiglu_alpha;
  out.swiglu_limit = l.swiglu_limit;
  out.routing = static_cast<metrale::MoeRouting>(l.routing);
  out.renormalize = l.renormalize != 0;
  out.n_group = l.n_group;
  out.topk_group = l.topk_group;
  out.routed_scaling_factor = l.routed_scaling_factor;
  out.correction_bias = l.correction_bias;
  return out;
}

metrale::MoeTokens read_tokens(std::string_view who, const metrale_moe_tokens* in) {
  const metrale_moe_tokens t =
      read_struct(who, "tokens", "metrale_moe_tokens", "METRALE_MOE_TOKENS_INIT", in,
                  metrale_moe_tokens METRALE_MOE_TOKENS_INIT);
  return metrale::MoeTokens{
      .num_tokens = t.num_tokens,
      .hidden = static_cast<const metrale::bf16_bits*>(t.hidden),
      .router_logits = t.router_logits,
      .logits_dtype = static_cast<metrale::DType>(t.logits_dtype),
      .topk_ids = t.topk_ids,
      .topk_weights = t.topk_weights,
      .residual = static_cast<const metrale::bf16_bits*>(t.residual),
      .out = static_cast<metrale::bf16_bits*>(t.out),
      .topk_ids_out = t.topk_ids_out,
      .topk_weights_out = t.topk_weights_out,
  };
}

}  // namespace

extern "C" {

metrale_status metrale_moe_forward(const metrale_moe_layer* layer, const metrale_moe_tokens* tokens,
                                   const metrale_exec* exec) {
  constexpr const char* kWho = "metrale_moe_forward";
  return api::c_call(kWho, [&] {
    const metrale::MoeForward args{read_layer(kWho, layer), read_tokens(kWho, tokens)};
    api::run_on_device(kWho, "exec->device", args, api::make_exec(kWho, exec));
  });
}

metrale_status metrale_moe_workspace_size(metrale_backend backend, const metrale_moe_layer* layer,
                                          int32_t num_tokens, size_t* bytes) {
  constexpr const char* kWho = "metrale_moe_workspace_size";
  return api::c_call(kWho, [&] {
    api::moe_workspace_size(kWho, static_cast<metrale::Backend>(backend), read_layer(kWho, layer),
                            num_tokens, bytes);
  });
}

}  // extern "C"
