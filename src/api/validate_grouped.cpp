// Validation of the grouped (per-expert) NVFP4 GEMMs. Host arrays (per-expert pointers and
// scale_2 values, host offsets) are read here, so they are checked before anything else reads
// them; the seed's ensure_group_arrays runs on the offsets, then offsets[E] <= M_total. Device
// offsets cannot be read, so max_rows_per_expert bounds them instead.
#include <cstdint>
#include <span>

#include <fmt/format.h>

#include "api/validate.hpp"
#include "core/error.hpp"
#include "core/validate.hpp"

namespace metrale::api {

using core::require_aligned;
using core::require_non_negative;
using core::require_not_null;

namespace {

// Argument names as the seeds spell them: gate_/up_ prefixes for two projections, none for one;
// scale_ptrs for [K/16, N] scales, sfb_ptrs for swizzled ones.
struct ProjNames {
  std::string packed, scale, scale2;
};

ProjNames proj_names(const GroupedNvfp4& args, int p) {
  const std::string_view prefix = args.proj_count == 1 ? "" : (p == 0 ? "gate_" : "up_");
  const std::string_view scale = args.scale_layout == ScaleLayout::sfb ? "sfb_ptrs" : "scale_ptrs";
  return {fmt::format("{}packed_ptrs", prefix), fmt::format("{}{}", prefix, scale),
          fmt::format("{}scale2_vals", prefix)};
}

std::string_view token_ids_name(const GroupedNvfp4& args) {
  return grouped_op_name(args) == "nvfp4_grouped_gate_up_fused" ? "sorted_token_ids" : "token_ids";
}

void validate_shape(std::string_view who, const GroupedNvfp4& args) {
  require_proj_count(who, args.proj_count);
  require_scale_layout(who, args.scale_layout);
  require_grouped_dims(who, args.groups, args.n, args.k);
  require_non_negative(who, "a_rows", args.a_rows);
}

// Host arrays of num_experts entries each, then the per-expert scale_2 values in them.
void validate_expert_arrays(std::string_view who, const GroupedNvfp4& args) {
  const std::int32_t experts = args.groups.num_experts;
  for (int p = 0; p < args.proj_count; ++p) {
    const ProjNames names = proj_names(args, p);
    const ExpertWeights& w = args.proj[p];
    if (experts > 0) {
      require_not_null(who, names.packed, w.packed_ptrs);
      require_not_null(who, names.scale, w.scale_ptrs);
      require_not_null(who, names.scale2, w.scale2_vals);
    }
    require_aligned(who, names.packed, w.packed_ptrs, alignof(std::uint64_t), "uint64 data");
    require_aligned(who, names.scale, w.scale_ptrs, alignof(std::uint64_t), "uint64 data");
    require_aligned(who, names.scale2, w.scale2_vals, alignof(float), "fp32 data");
    core::require_scale2_each(who, names.scale2, w.scale2_vals, experts);
  }
}

void validate_offsets(std::string_view who, const GroupedNvfp4& args) {
  const ExpertGroups& g = args.groups;
  require_not_null(who, "expert_offsets", g.offsets);
  require_aligned(who, "expert_offsets", g.offsets, alignof(std::int32_t), "int32 data");
  if (g.offsets_on_device) {
    METRALE_REQUIRE(g.max_rows_per_expert >= 0 && g.max_rows_per_expert <= g.m_total,
                    "{}: max_rows_per_expert = {} is outside [0, M_total = {}], expected a bound "
                    "on every expert's rows (the offsets are on the device)",
                    who, g.max_rows_per_expert, g.m_total);
    return;
  }
  require_host_offsets(who, g);
}

// An expert that has rows must have its weights; with device offsets any expert may have rows.
void validate_expert_pointers(std::string_view who, const GroupedNvfp4& args) {
  const ExpertGroups& g = args.groups;
  for (int p = 0; p < args.proj_count; ++p) {
    const ProjNames names = proj_names(args, p);
    for (std::int32_t e = 0; e < g.num_experts; ++e) {
      const std::int64_t rows = g.offsets_on_device ? -1 : g.offsets[e + 1] - g.offsets[e];
      if (rows == 0) continue;
      METRALE_REQUIRE(args.proj[p].packed_ptrs[e] != 0,
                      "{}: {}[{}] is null, expected expert {}'s weight (it may have rows)", who,
                      names.packed, e, e);
      METRALE_REQUIRE(args.proj[p].scale_ptrs[e] != 0,
                      "{}: {}[{}] is null, expected expert {}'s scales (it may have rows)", who,
                      names.scale, e, e);
    }
  }
}

void validate_rows(std::string_view who, const GroupedNvfp4& args) {
  const std::string_view ids = token_ids_name(args);
  require_aligned(who, ids, args.token_ids, alignof(std::int32_t), "int32 data");
  if (args.groups.m_total == 0) return;  // no rows: a and out are not touched
  require_not_null(who, "a", args.a);
  require_aligned(who, "a", args.a, alignof(bf16_bits), "bf16 data");
  for (int p = 0; p < args.proj_count; ++p) {
    const std::string name = args.proj_count == 1 ? "c" : (p == 0 ? "c_gate" : "c_up");
    require_not_null(who, name, args.out[p]);
    require_aligned(who, name, args.out[p], alignof(bf16_bits), "bf16 data");
  }
  METRALE_REQUIRE(args.token_ids != nullptr || args.a_rows >= args.groups.m_total,
                  "{}: a_rows = {} < M_total = {}, expected a to hold every group row (no {}: "
                  "group row i reads row i of a)",
                  who, args.a_rows, args.groups.m_total, ids);
}

}  // namespace

void require_proj_count(std::string_view who, std::int32_t proj_count) {
  METRALE_REQUIRE(proj_count == 1 || proj_count == 2,
                  "{}: proj_count = {}, expected 1 (down) or 2 (gate and up)", who, proj_count);
}

void require_grouped_dims(std::string_view who, const ExpertGroups& groups, std::int32_t n,
                          std::int32_t k) {
  require_nvfp4_shape(who, n, k);
  require_non_negative(who, "num_experts", groups.num_experts);
  require_non_negative(who, "M_total", groups.m_total);
}

void require_host_offsets(std::string_view who, const ExpertGroups& groups) {
  const std::span<const std::int32_t> offsets(groups.offsets,
                                              static_cast<std::size_t>(groups.num_experts) + 1);
  // The per-expert arrays' lengths do not cross the C ABI: validate checks their non-nullness.
  core::ensure_group_arrays(who, groups.num_experts, {}, offsets);
  core::require_offsets_within(who, offsets, groups.m_total);
}

std::string_view grouped_op_name(const GroupedNvfp4& args) {
  if (args.proj_count == 1) return "nvfp4_grouped_down";
  if (args.proj_count == 2 && args.scale_layout == ScaleLayout::sfb)
    return "nvfp4_grouped_gate_up_fused";
  if (args.proj_count == 2) return "nvfp4_grouped_gate_up";
  return "nvfp4_grouped";
}

void validate(std::string_view who, const GroupedNvfp4& args) {
  validate_shape(who, args);
  validate_expert_arrays(who, args);
  validate_offsets(who, args);
  validate_expert_pointers(who, args);
  validate_rows(who, args);
}

void validate_for_cpu(std::string_view who, const GroupedNvfp4& args) {
  const ExpertGroups& g = args.groups;
  if (g.offsets_on_device) {
    fail(Status::unsupported,
         "{}: offsets_on_device = true, but the CPU backend reads expert_offsets on the host; "
         "pass host offsets",
         who);
  }
  if (args.token_ids == nullptr) return;
  const std::string_view ids = token_ids_name(args);
  for (std::int32_t i = g.offsets[0]; i < g.offsets[g.num_experts]; ++i) {
    const std::int32_t row = args.token_ids[i];
    if (args.a_rows > 0) {
      METRALE_REQUIRE(row >= 0 && row < args.a_rows, "{}: {}[{}] = {} is outside [0, a_rows = {})",
                      who, ids, i, row, args.a_rows);
    } else {
      METRALE_REQUIRE(row >= 0, "{}: {}[{}] = {} is negative, expected a row of a", who, ids, i,
                      row);
      // a's row count is an int32 too: its last row is INT32_MAX - 1.
      METRALE_REQUIRE(row < INT32_MAX,
                      "{}: {}[{}] = {} is not a row of a, expected a row index < {}", who, ids, i,
                      row, INT32_MAX);
    }
  }
}

}  // namespace metrale::api
