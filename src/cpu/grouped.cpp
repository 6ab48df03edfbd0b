// CPU reference of the grouped (per-expert) NVFP4 GEMM behind nvfp4_grouped_gate_up, _fused and
// _down. For each expert e, group rows i in [offsets[e], offsets[e+1]) read a[row(i), :] with
// row(i) = token_ids ? token_ids[i] : i, and for each projection p
//   out[p][i, :] = a[row(i), :] · W_{p,e}ᵀ   (W: packed [N, K/2] or prepacked, scales [K/16, N]
//                                            or SFB)
// through the same panel decode + detail::gemm_rows as nvfp4_gemm, so each expert's rows equal
// nvfp4_gemm on those rows bit for bit. Group rows outside every expert's range are not written.
// Host memory: offsets, token ids, pointer arrays and data all live on the host.
#include <cstdint>
#include <vector>

#include <fmt/format.h>

#include "core/error.hpp"
#include "cpu/cpu_backend.hpp"
#include "cpu/footprint.hpp"
#include "cpu/gemm_core.hpp"
#include "format/layouts.hpp"

namespace metrale::cpu {
namespace {

// Gathers the expert's group rows [begin, end) of `a` into fp32 rows.
void gather_rows(const GroupedNvfp4& args, std::int32_t begin, std::int32_t end, float* dst) {
  const std::size_t K = static_cast<std::size_t>(args.k);
  for (std::int32_t i = begin; i < end; ++i) {
    const std::int32_t row = args.token_ids ? args.token_ids[i] : i;
    // The API validates these; checked again here because a bad row would read out of bounds.
    if (args.token_ids) {
      METRALE_REQUIRE(row >= 0 && row < args.a_rows,
                      "nvfp4_grouped: token_ids[{}] = {} is outside [0, a_rows = {})", i, row,
                      args.a_rows);
    } else {
      METRALE_REQUIRE(row < args.a_rows, "nvfp4_grouped: group row {} is beyond a_rows = {}", row,
                      args.a_rows);
    }
    detail::bf16_to_float(args.a + static_cast<std::size_t>(row) * K, K,
                          dst + static_cast<std::size_t>(i - begin) * K);
  }
}

// The call's host footprint: a, the weights of every expert that has rows, the outputs, and the
// scratch (one expert's gathered rows in fp32 and the weight panels), checked before any read.
void require_grouped_memory(const GroupedNvfp4& args) {
  const ExpertGroups& g = args.groups;
  std::int64_t experts_with_rows = 0;
  for (std::int32_t e = 0; e < g.num_experts; ++e)
    experts_with_rows += g.offsets[e + 1] > g.offsets[e] ? 1 : 0;
  const double n = args.n, k = args.k, projections = args.proj_count;
  const double scale = args.scale_layout == ScaleLayout::sfb
                           ? static_cast<double>(format::sfb_bytes(args.n, args.k))
                           : n * (args.k / 16);
  require_host_memory(
      fmt::format("a_rows = {}, M_total = {}, N = {}, K = {}, {} experts with rows", args.a_rows,
                  g.m_total, args.n, args.k, experts_with_rows),
      {{"a", static_cast<double>(args.a_rows) * k * 2},
       {"weights", projections * static_cast<double>(experts_with_rows) * (n * k / 2 + scale)},
       {"outputs", projections * static_cast<double>(g.m_total) * n * 2},
       {"scratch", static_cast<double>(g.max_rows_per_expert) * k * 4 +
                       detail::panel_scratch_bytes(args.k)}});
}

}  // namespace

void nvfp4_grouped(const GroupedNvfp4& args) {
  const ExpertGroups& groups = args.groups;
  if (groups.offsets_on_device) {
    fail(Status::unsupported,
         "nvfp4_grouped: the CPU backend reads expert offsets on the host, got offsets on the "
         "device");
  }
  require_grouped_memory(args);
  const std::size_t N = static_cast<std::size_t>(args.n), K = static_cast<std::size_t>(args.k);
  std::vector<float> act;
  for (std::int32_t e = 0; e < groups.num_experts; ++e) {
    const std::int32_t begin = groups.offsets[e], end = groups.offsets[e + 1];
    if (end <= begin) continue;  // an expert with no rows: nothing to compute or write
    act.resize(static_cast<std::size_t>(end - begin) * K);
    gather_rows(args, begin, end, act.data());
    for (std::int32_t p = 0; p < args.proj_count; ++p) {
      const ExpertWeights& proj = args.proj[p];
      const auto* packed =
          reinterpret_cast<const std::uint8_t*>(static_cast<std::uintptr_t>(proj.packed_ptrs[e]));
      const auto* scale =
          reinterpret_cast<const std::uint8_t*>(static_cast<std::uintptr_t>(proj.scale_ptrs[e]));
      detail::gemm_rows(
          act.data(), end - begin,
          detail::nvfp4_rows(packed, scale, args.scale_layout, args.weight_layout, args.n, args.k),
          args.n, args.k, proj.scale2_vals[e], args.out[p] + static_cast<std::size_t>(begin) * N);
    }
  }
}

}  // namespace metrale::cpu
