// silu of every bf16 value, by its bits, for the MoE layer's activation (moe_glue.cu) and the
// decode family's gated staging (decode_plan.cu). Their inputs are bf16, so silu(g) takes 65536
// values; each is format::silu_f32's bits, computed on the device by the MoE routing kernel's
// threads that do not route (moe/moe_route.cu), the same function the CPU oracle evaluates. A
// lookup is a load where the function is ~60 instructions (an exp and an IEEE division): the
// activation at prefill sizes was bound by them, not by its bytes (docs/perf.md, "2026-12-04").
#pragma once

#include <cstdint>

#include "cuda/cuda_backend.hpp"
#include "format/bf16.hpp"
#include "format/moe_math.hpp"

namespace metrale::cuda {

// silu(g) for g a bf16 value held in fp32: from `table` when the layer built one, else computed.
__device__ __forceinline__ float silu_of(const float* table, float g) {
  return table ? __ldg(table + (format::float_to_bits(g) >> 16)) : format::silu_f32(g);
}

// Share `part` of `parts` of the table's entries, filled by the threads `start`, `start` +
// `stride`, ... of the caller (a routing block's threads that do not route).
__device__ __forceinline__ void fill_silu_share(float* table, unsigned part, unsigned parts,
                                                int start, int stride) {
  const int per_part = (format::kBf16Patterns + parts - 1) / parts;
  const int begin = part * per_part;
  const int end = min(begin + per_part, format::kBf16Patterns);
  for (int i = begin + start; i < end; i += stride)
    table[i] = format::silu_f32(format::bf16_to_float(static_cast<std::uint16_t>(i)));
}

// The MoE layer's activation of bf16 inputs g and u (docs/api.md), fp32 before its rounding:
// gpt-oss's clamped SwiGLU, or silu(g) · u with silu from `table` when given.
__device__ __forceinline__ float activation_f32(float g, float u, bool clamped, float alpha,
                                                float limit, const float* table) {
  return clamped ? format::swiglu_clamped(g, u, alpha, limit)
                 : format::mul_rn(silu_of(table, g), u);
}

// act(gate, up) as the MoE layer's activation kernel computes it without biases (moe_glue.cu):
// fp32 of the bf16 inputs, one rounding to bf16. What a kernel that computes its gated input
// while it loads it (the decode family's staging, the stream family's B fragments) writes.
__device__ inline std::uint16_t glu_value(const GluInput& glu, std::uint16_t gate,
                                          std::uint16_t up) {
  const float g = format::bf16_to_float(gate), u = format::bf16_to_float(up);
  return format::float_to_bf16(
      activation_f32(g, u, glu.clamped, glu.alpha, glu.limit, glu.silu_table));
}

}  // namespace metrale::cuda
