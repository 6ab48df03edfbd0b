// Argument validation of every operation, run once at the C++ API before any backend is chosen
// (and so for every caller: C ABI, C++ API, CLI). Each function throws metrale::Error naming
// `who`, the argument, its value and the expectation. Checks that depend on where memory lives
// (host offsets, token ids read on the host) are validate_for_cpu's, run once the CPU backend is
// chosen.
#pragma once

#include <string>
#include <string_view>

#include "metrale/metrale.hpp"

namespace metrale::api {

void validate(std::string_view who, const DenseGemm& args);
void validate(std::string_view who, const Nvfp4Gemm& args);
void validate(std::string_view who, const PackNvfp4& args);
void validate(std::string_view who, const SwizzleScales& args);
void validate(std::string_view who, const TransposePacked& args);
void validate(std::string_view who, const PrepackNvfp4& args);
// The quantizer, the swizzle and the transposes read one buffer while writing another: buffers
// that share a byte are refused (after the backend and, on the CPU, the footprint are checked, so
// that a bad backend or an impossible size is what such a call hears first).
void require_disjoint_buffers(std::string_view who, const PackNvfp4& args);
void require_disjoint_buffers(std::string_view who, const SwizzleScales& args);
void require_disjoint_buffers(std::string_view who, const TransposePacked& args);
void validate(std::string_view who, const GroupedNvfp4& args);
// The MoE layer: the layer alone (what the workspace query needs too), then the tokens' buffers.
void validate_moe_layer(std::string_view who, const MoeLayer& layer);
// The workspace query's token count: T >= 0 and T·top_k within int32, as the call checks it.
void validate_moe_token_count(std::string_view who, const MoeLayer& layer, std::int32_t num_tokens);
void validate(std::string_view who, const MoeForward& args);

// The CPU backend reads everything on the host: it refuses device-side offsets (unsupported)
// and checks each gathered row index against a_rows (or >= 0 when a_rows is 0, "unknown").
void validate_for_cpu(std::string_view who, const GroupedNvfp4& args);
// The MoE layer's data on the host: finite logits and correction bias, or ids in [0, E) and
// finite weights, each refusal naming [token][column].
void validate_for_cpu(std::string_view who, const MoeForward& args);

// The quantizer's input on the host (CPU backend): every weight finite, else invalid_argument
// naming the first bad index, its row and column, and the value.
void require_finite_weights_on_host(std::string_view who, const PackNvfp4& args);

// The seed's name for a grouped call: nvfp4_grouped_down (one projection),
// nvfp4_grouped_gate_up (two, [K/16, N] scales), nvfp4_grouped_gate_up_fused (two, SFB scales).
std::string_view grouped_op_name(const GroupedNvfp4& args);

// Validation of the small enums that cross the C ABI as integers.
// `name`: the caller's name for the value (layer->scale_layout in the MoE layer's C ABI).
void require_scale_layout(std::string_view who, ScaleLayout layout,
                          std::string_view name = "scale_layout");
void require_weight_layout(std::string_view who, WeightLayout layout,
                           std::string_view name = "weight_layout");

// Pieces of validate() that the size queries and the C ABI's _ex call also run, with the same
// messages:
//   require_proj_count    1 (down) or 2 (gate and up); the C ABI checks it before reading proj[]
//   require_nvfp4_shape   N > 0, K > 0, K a multiple of 16 (one e4m3 scale per 16 weights)
//   require_grouped_dims  the NVFP4 shape, then num_experts >= 0 and M_total >= 0
//   require_host_offsets  host offsets[0..E]: the seed's ensure_group_arrays, offsets[E] <= M_total
//   require_row_bound     device offsets (or none, in a size query): max_rows_per_expert in
//                         [0, M_total]
void require_proj_count(std::string_view who, std::int32_t proj_count);
void require_nvfp4_shape(std::string_view who, std::int32_t n, std::int32_t k);
void require_grouped_dims(std::string_view who, const ExpertGroups& groups, std::int32_t n,
                          std::int32_t k);
void require_host_offsets(std::string_view who, const ExpertGroups& groups);
void require_row_bound(std::string_view who, const ExpertGroups& groups);

}  // namespace metrale::api
