// The CPU reference backend: every operation, on host memory, written to be obviously right
// (fp64 accumulation, bf16 out rounded to nearest even), then spread over the machine's cores.
// It is the oracle every other backend is tested against. Arguments arrive validated.
#pragma once

#include "metrale/metrale.hpp"

namespace metrale::cpu {

void bf16_gemm(const DenseGemm& args);
void nvfp4_gemm(const Nvfp4Gemm& args);
void pack_nvfp4(const PackNvfp4& args);
// The quantizer's host footprint, checked before its input is read (the API's finite-weight scan
// reads it first, so this runs before that scan).
void require_pack_memory(const PackNvfp4& args);
void swizzle_scales(const SwizzleScales& args);
void transpose_packed(const TransposePacked& args);
// [N, K/2] bytes into or out of the prepacked layout (format/prepack.hpp); src == dst in place.
void prepack_nvfp4(const PrepackNvfp4& args);
void nvfp4_grouped(const GroupedNvfp4& args);
// The whole MoE layer (moe.cpp), its GEMMs through nvfp4_grouped above.
void moe_forward(const MoeForward& args);

}  // namespace metrale::cpu
