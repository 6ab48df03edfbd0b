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
void validate(std::string_view who, const GroupedNvfp4& args);

// The CPU backend reads everything on the host: it refuses device-side offsets (unsupported)
// and checks each gathered row index against a_rows (or >= 0 when a_rows is 0, "unknown").
void validate_for_cpu(std::string_view who, const GroupedNvfp4& args);

// The seed's name for a grouped call: nvfp4_grouped_down (one projection),
// nvfp4_grouped_gate_up (two, [K/16, N] scales), nvfp4_grouped_gate_up_fused (two, SFB scales).
std::string_view grouped_op_name(const GroupedNvfp4& args);

// Validation of the small enums that cross the C ABI as integers.
void require_scale_layout(std::string_view who, ScaleLayout layout);

}  // namespace metrale::api
