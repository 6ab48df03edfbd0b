// silu of every bf16 value, by its bits, for the MoE layer's activation (moe_glue.cu) and the
// decode family's gated staging (decode_plan.cu). Their inputs are bf16, so silu(g) takes 65536
// values; each is format::silu_f32's bits, computed on the device by the MoE routing kernel's
// threads that do not route (moe/moe_route.cu), the same function the CPU oracle evaluates. A
// lookup is a load where the function is ~60 instructions (an exp and an IEEE division): the
// activation at prefill sizes was bound by them, not by its bytes (docs/perf.md, "2026-12-04").
#pragma once

#include <cstdint>

#include "format/bf16.hpp"
#include "format/moe_math.hpp"

namespace metrale::cuda {

// silu(g) for g a bf16 value held in fp32: from `table` when the layer built one, else computed.
__device__ __forceinline__ float silu_of(const float* table, float g) {
  return table ? __ldg(table + (format::float_to_bits(g) >> 16)) : format::silu_f32(g);
}

// Entries [begin, end) of the table, `stride` apart from begin + start (a block's share of it).
__device__ __forceinline__ void fill_silu_table(float* table, int begin, int end, int start,
                                                int stride) {
  for (int i = begin + start; i < end; i += stride)
    table[i] = format::silu_f32(format::bf16_to_float(static_cast<std::uint16_t>(i)));
}

}  // namespace metrale::cuda
