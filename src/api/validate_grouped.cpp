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

// The caller's names for every argument a message may name. Three callers, three vocabularies:
//   the seed-shaped C calls (metrale_*nvfp4_grouped_*): their parameters, gate_/up_ prefixes for
//     two projections, scale_ptrs or sfb_ptrs, a_bf16, c_bf16 / c_gate_bf16 / c_up_bf16;
//   metrale_nvfp4_grouped_ex and its workspace query: token_ids, proj[p].packed_ptrs, out[p],
//     groups->offsets, groups->m_total ...;
//   the C++ API: the seeds' operation names and argument names (docs/api.md, "Errors").
struct GroupedNames {
  std::string a = "a", a_rows = "a_rows", ids = "token_ids", max_rows = "max_rows_per_expert",
              on_device = "offsets_on_device";
  std::string packed[2], scale[2], scale2[2], out[2];
  core::OffsetNames offsets;
};

bool is_ex_caller(std::string_view who) {
  return who == "metrale_nvfp4_grouped_ex" || who == "metrale_nvfp4_grouped_workspace_size";
}

GroupedNames ex_names() {
  GroupedNames n;
  n.a = "a_bf16";
  n.max_rows = "groups->max_rows_per_expert";
  n.on_device = "groups->offsets_on_device";
  for (int p = 0; p < 2; ++p) {
    n.packed[p] = fmt::format("proj[{}].packed_ptrs", p);
    n.scale[p] = fmt::format("proj[{}].scale_ptrs", p);
    n.scale2[p] = fmt::format("proj[{}].scale2_vals", p);
    n.out[p] = fmt::format("out[{}]", p);
  }
  n.offsets = {"groups->offsets", "groups->num_experts", "groups->m_total"};
  return n;
}

GroupedNames seed_names(std::string_view who, const GroupedNvfp4& args) {
  GroupedNames n;
  const bool c_abi = who.starts_with("metrale_");
  const bool fused = grouped_op_name(args) == "nvfp4_grouped_gate_up_fused";
  const std::string_view suffix = c_abi ? "_bf16" : "";
  n.a = fmt::format("a{}", suffix);
  if (fused) n.ids = "sorted_token_ids";
  const std::string_view scale = args.scale_layout == ScaleLayout::sfb ? "sfb_ptrs" : "scale_ptrs";
  for (int p = 0; p < 2; ++p) {
    const std::string_view prefix = args.proj_count == 1 ? "" : (p == 0 ? "gate_" : "up_");
    n.packed[p] = fmt::format("{}packed_ptrs", prefix);
    n.scale[p] = fmt::format("{}{}", prefix, scale);
    n.scale2[p] = fmt::format("{}scale2_vals", prefix);
    n.out[p] = args.proj_count == 1 ? fmt::format("c{}", suffix)
                                    : fmt::format("c_{}{}", p == 0 ? "gate" : "up", suffix);
  }
  return n;
}

GroupedNames names_for(std::string_view who, const GroupedNvfp4& args) {
  return is_ex_caller(who) ? ex_names() : seed_names(who, args);
}

void validate_shape(std::string_view who, const GroupedNvfp4& args, const GroupedNames& names) {
  require_proj_count(who, args.proj_count);
  require_scale_layout(who, args.scale_layout);
  require_weight_layout(who, args.weight_layout);
  require_grouped_dims(who, args.groups, args.n, args.k);
  require_non_negative(who, names.a_rows, args.a_rows);
}

// Host arrays of num_experts entries each, then the per-expert scale_2 values in them.
void validate_expert_arrays(std::string_view who, const GroupedNvfp4& args,
                            const GroupedNames& names) {
  const std::int32_t experts = args.groups.num_experts;
  for (int p = 0; p < args.proj_count; ++p) {
    const ExpertWeights& w = args.proj[p];
    if (experts > 0) {
      require_not_null(who, names.packed[p], w.packed_ptrs);
      require_not_null(who, names.scale[p], w.scale_ptrs);
      require_not_null(who, names.scale2[p], w.scale2_vals);
    }
    require_aligned(who, names.packed[p], w.packed_ptrs, alignof(std::uint64_t), "uint64 data");
    require_aligned(who, names.scale[p], w.scale_ptrs, alignof(std::uint64_t), "uint64 data");
    require_aligned(who, names.scale2[p], w.scale2_vals, alignof(float), "fp32 data");
    core::require_scale2_each(who, names.scale2[p], w.scale2_vals, experts);
  }
}

void validate_offsets(std::string_view who, const GroupedNvfp4& args, const GroupedNames& names) {
  const ExpertGroups& g = args.groups;
  require_not_null(who, names.offsets.offsets, g.offsets);
  require_aligned(who, names.offsets.offsets, g.offsets, alignof(std::int32_t), "int32 data");
  if (g.offsets_on_device) return require_row_bound(who, g);
  require_host_offsets(who, g);
}

// An expert that has rows must have its weights; with device offsets any expert may have rows.
void validate_expert_pointers(std::string_view who, const GroupedNvfp4& args,
                              const GroupedNames& names) {
  const ExpertGroups& g = args.groups;
  for (int p = 0; p < args.proj_count; ++p) {
    for (std::int32_t e = 0; e < g.num_experts; ++e) {
      const std::int64_t rows = g.offsets_on_device ? -1 : g.offsets[e + 1] - g.offsets[e];
      if (rows == 0) continue;
      METRALE_REQUIRE(args.proj[p].packed_ptrs[e] != 0,
                      "{}: {}[{}] is null, expected expert {}'s weight (it may have rows)", who,
                      names.packed[p], e, e);
      METRALE_REQUIRE(args.proj[p].scale_ptrs[e] != 0,
                      "{}: {}[{}] is null, expected expert {}'s scales (it may have rows)", who,
                      names.scale[p], e, e);
    }
  }
}

void validate_rows(std::string_view who, const GroupedNvfp4& args, const GroupedNames& names) {
  require_aligned(who, names.ids, args.token_ids, alignof(std::int32_t), "int32 data");
  if (args.groups.m_total == 0) return;  // no rows: a and out are not touched
  require_not_null(who, names.a, args.a);
  require_aligned(who, names.a, args.a, alignof(bf16_bits), "bf16 data");
  for (int p = 0; p < args.proj_count; ++p) {
    require_not_null(who, names.out[p], args.out[p]);
    require_aligned(who, names.out[p], args.out[p], alignof(bf16_bits), "bf16 data");
  }
  METRALE_REQUIRE(args.token_ids != nullptr || args.a_rows >= args.groups.m_total,
                  "{}: {} = {} < {} = {}, expected {} to hold every group row (no {}: group row i "
                  "reads row i of {})",
                  who, names.a_rows, args.a_rows, names.offsets.m_total, args.groups.m_total,
                  names.a, names.ids, names.a);
}

}  // namespace

void require_proj_count(std::string_view who, std::int32_t proj_count) {
  METRALE_REQUIRE(proj_count == 1 || proj_count == 2,
                  "{}: proj_count = {}, expected 1 (down) or 2 (gate and up)", who, proj_count);
}

void require_grouped_dims(std::string_view who, const ExpertGroups& groups, std::int32_t n,
                          std::int32_t k) {
  const core::OffsetNames names = is_ex_caller(who) ? ex_names().offsets : core::OffsetNames{};
  require_nvfp4_shape(who, n, k);
  require_non_negative(who, names.num_experts, groups.num_experts);
  require_non_negative(who, names.m_total, groups.m_total);
}

void require_host_offsets(std::string_view who, const ExpertGroups& groups) {
  const core::OffsetNames names = is_ex_caller(who) ? ex_names().offsets : core::OffsetNames{};
  const std::span<const std::int32_t> offsets(groups.offsets,
                                              static_cast<std::size_t>(groups.num_experts) + 1);
  // The per-expert arrays' lengths do not cross the C ABI: validate checks their non-nullness.
  core::ensure_group_arrays(who, groups.num_experts, {}, offsets, names);
  core::require_offsets_within(who, offsets, groups.m_total, names);
}

std::string_view grouped_op_name(const GroupedNvfp4& args) {
  if (args.proj_count == 1) return "nvfp4_grouped_down";
  if (args.proj_count == 2 && args.scale_layout == ScaleLayout::sfb)
    return "nvfp4_grouped_gate_up_fused";
  if (args.proj_count == 2) return "nvfp4_grouped_gate_up";
  return "nvfp4_grouped";
}

void require_row_bound(std::string_view who, const ExpertGroups& g) {
  const GroupedNames names = is_ex_caller(who) ? ex_names() : GroupedNames{};
  METRALE_REQUIRE(g.max_rows_per_expert >= 0 && g.max_rows_per_expert <= g.m_total,
                  "{}: {} = {} is outside [0, {} = {}], expected a bound on every expert's rows "
                  "(no offsets are read on the host)",
                  who, names.max_rows, g.max_rows_per_expert, names.offsets.m_total, g.m_total);
}

void validate(std::string_view who, const GroupedNvfp4& args) {
  const GroupedNames names = names_for(who, args);
  validate_shape(who, args, names);
  validate_expert_arrays(who, args, names);
  validate_offsets(who, args, names);
  validate_expert_pointers(who, args, names);
  validate_rows(who, args, names);
}

void validate_for_cpu(std::string_view who, const GroupedNvfp4& args) {
  const ExpertGroups& g = args.groups;
  const GroupedNames names = names_for(who, args);
  if (g.offsets_on_device) {
    fail(Status::unsupported,
         "{}: {} = true, but the CPU backend reads {} on the host; pass host offsets", who,
         names.on_device, names.offsets.offsets);
  }
  if (args.token_ids == nullptr) return;
  const std::string_view ids = names.ids;
  for (std::int32_t i = g.offsets[0]; i < g.offsets[g.num_experts]; ++i) {
    const std::int32_t row = args.token_ids[i];
    if (args.a_rows > 0) {
      METRALE_REQUIRE(row >= 0 && row < args.a_rows, "{}: {}[{}] = {} is outside [0, {} = {})",
                      who, ids, i, row, names.a_rows, args.a_rows);
    } else {
      METRALE_REQUIRE(row >= 0, "{}: {}[{}] = {} is negative, expected a row of {}", who, ids, i,
                      row, names.a);
      // a's row count is an int32 too: its last row is INT32_MAX - 1.
      METRALE_REQUIRE(row < INT32_MAX,
                      "{}: {}[{}] = {} is not a row of {}, expected a row index < {}", who, ids,
                      i, row, names.a, INT32_MAX);
    }
  }
}

}  // namespace metrale::api
