// The C ABI boundary helpers (c_abi_common.hpp).
#include "api/c_abi_common.hpp"

#include <cstddef>
#include <span>

#include "core/error.hpp"
#include "core/last_error.hpp"
#include "core/validate.hpp"

namespace metrale::api {

metrale_status finish(const Result& r) {
  if (r.ok()) {
    core::clear_last_error();
  } else {
    core::set_last_error(r.message);
  }
  return static_cast<metrale_status>(r.status);
}

Exec make_exec(Backend backend, void* workspace, std::size_t workspace_size, void* stream) {
  return Exec{backend, workspace, workspace_size, stream};
}

Exec make_exec(std::string_view who, const metrale_exec* exec) {
  const metrale_exec defaults = METRALE_EXEC_INIT;
  // Two layouts: ABI 1's ends before `device`, today's holds all of it; a size between them
  // would read part of the caller's device index.
  constexpr std::size_t kDeviceAt = offsetof(metrale_exec, device);
  constexpr std::size_t kDeviceEnd = kDeviceAt + sizeof(defaults.device);
  METRALE_REQUIRE(
      exec == nullptr || exec->struct_size <= kDeviceAt || exec->struct_size >= kDeviceEnd,
      "{}: exec->struct_size = {} ends inside exec->device (bytes {} to {}), expected "
      "sizeof(metrale_exec) = {} (set it with METRALE_EXEC_INIT) or {} (ABI 1)",
      who, exec == nullptr ? 0 : exec->struct_size, kDeviceAt, kDeviceEnd - 1, sizeof(metrale_exec),
      kDeviceAt);
  // ABI 1 without `device` is the oldest layout a caller may still pass.
  const metrale_exec e =
      exec == nullptr ? defaults
                      : read_versioned(who, "exec", "metrale_exec", "METRALE_EXEC_INIT", exec,
                                       offsetof(metrale_exec, device), defaults);
  return Exec{static_cast<Backend>(e.backend), e.workspace, e.workspace_size, e.stream, e.device};
}

ExpertGroups read_groups(std::string_view who, const metrale_groups* groups) {
  core::require_not_null(who, "groups", groups);
  const metrale_groups g = read_versioned(who, "groups", "metrale_groups", "METRALE_GROUPS_INIT",
                                          groups, sizeof(metrale_groups), metrale_groups{});
  return ExpertGroups{g.offsets, g.offsets_on_device != 0, g.num_experts, g.m_total,
                      g.max_rows_per_expert};
}

LayoutFlags read_layout_flags(std::string_view who, std::string_view name,
                              metrale_scale_layout value) {
  const std::int32_t scale = value & ~METRALE_WEIGHTS_PREPACKED;
  METRALE_REQUIRE(scale == METRALE_SCALE_K16_BY_N || scale == METRALE_SCALE_SFB,
                  "{}: {} = {} ({:#x}), expected 0 ([K/16, N]) or 1 (SFB), optionally or'ed with "
                  "METRALE_WEIGHTS_PREPACKED (0x100)",
                  who, name, value, static_cast<std::uint32_t>(value));
  return {static_cast<ScaleLayout>(scale), (value & METRALE_WEIGHTS_PREPACKED) != 0
                                               ? WeightLayout::prepacked
                                               : WeightLayout::packed};
}

DenseGemm dense_gemm(const void* act, const void* weight, void* out, std::int32_t m, std::int32_t n,
                     std::int32_t k) {
  return {static_cast<const bf16_bits*>(act),
          static_cast<const bf16_bits*>(weight),
          static_cast<bf16_bits*>(out),
          m,
          n,
          k};
}

void run_seed_grouped(std::string_view who, const SeedGrouped& call, const Exec& exec) {
  // M_total comes from the offsets themselves, so check them before reading offsets[E].
  core::require_non_negative(who, "num_experts", call.num_experts);
  core::require_not_null(who, "expert_offsets", call.offsets);
  core::require_aligned(who, "expert_offsets", call.offsets, alignof(std::int32_t), "int32 data");
  const std::span<const std::int32_t> offsets(call.offsets,
                                              static_cast<std::size_t>(call.num_experts) + 1);
  core::ensure_group_arrays(who, call.num_experts, {}, offsets);
  const std::int32_t m_total = offsets.back();

  GroupedNvfp4 args{};
  args.a = static_cast<const bf16_bits*>(call.a);
  args.a_rows = call.token_ids == nullptr ? m_total : 0;
  args.token_ids = call.token_ids;
  args.proj_count = call.proj_count;
  for (int p = 0; p < call.proj_count; ++p) {
    args.proj[p] = call.proj[p];
    args.out[p] = static_cast<bf16_bits*>(call.c[p]);
  }
  args.scale_layout = call.layout;
  args.groups = ExpertGroups{call.offsets, false, call.num_experts, m_total, 0};
  args.n = call.n;
  args.k = call.k;
  run(who, args, exec);
}

}  // namespace metrale::api
