// The MoE layer in fp64 without its bf16 intermediates: the ideal against which the realistic mode
// measures both the backend and the CPU backend (compare.hpp, compare_to_ideal). Written from
// docs/api.md's formulas, independently of src/cpu: weights decoded here (e2m1 · e4m3, exact),
//   g = Σ_h x_h·Wg[n,h]·scale_2 + bias,  u likewise,  a = act(g, u),
//   d = Σ_i a_i·Wd[c,i]·scale_2 + bias,  out[c] = Σ_j w_j·d_j[c]
// all in double, for the given routing (the oracle's: both backends must reproduce it exactly).
#pragma once

#include <cstdint>
#include <vector>

#include "check/moe_case.hpp"

namespace metrale::check {

// out [rows.size(), H] for tokens `rows`; ids and weights are those tokens' [rows.size(), k].
std::vector<double> moe_ideal(const MoeHost& h, const std::vector<std::int64_t>& rows,
                              const std::vector<std::int32_t>& ids,
                              const std::vector<float>& weights);

}  // namespace metrale::check
