// Dispatch of the grouped (per-expert) NVFP4 GEMMs: down (one projection), gate/up (two), with
// [K/16, N] or SFB scales, rows gathered through token ids or not, offsets on the host or the
// device. With host offsets the API fills in max_rows_per_expert, so every backend can size its
// launch from it whichever side the offsets live on.
#include <algorithm>
#include <span>

#include "api/dispatch.hpp"
#include "api/select.hpp"
#include "api/validate.hpp"
#include "core/error.hpp"
#include "core/validate.hpp"
#include "cpu/cpu_backend.hpp"

#ifdef METRALE_HAS_CUDA
#include "reference/cublaslt/cublaslt_backend.hpp"
#endif
#ifdef METRALE_HAS_CUTLASS
#include "reference/cutlass/cutlass_backend.hpp"
#endif

namespace metrale::api {

namespace {

GroupedNvfp4 with_max_rows(const GroupedNvfp4& args) {
  GroupedNvfp4 out = args;
  if (!args.groups.offsets_on_device) {
    std::int32_t max_rows = 0;
    for (std::int32_t e = 0; e < args.groups.num_experts; ++e) {
      max_rows = std::max(max_rows, args.groups.offsets[e + 1] - args.groups.offsets[e]);
    }
    out.groups.max_rows_per_expert = max_rows;
  }
  return out;
}

// a_rows = 0 means "unknown" (the seeds' fused call does not carry the token count). On the host
// the ids themselves bound it: after validate_for_cpu every id read is >= 0, so a holds at least
// max id + 1 rows, and the CPU backend gets a bound it can check every read against.
void infer_a_rows(GroupedNvfp4& args) {
  if (args.token_ids == nullptr || args.a_rows > 0) return;
  std::int32_t rows = 0;
  for (std::int32_t i = args.groups.offsets[0]; i < args.groups.offsets[args.groups.num_experts];
       ++i) {
    rows = std::max(rows, args.token_ids[i] + 1);
  }
  args.a_rows = rows;
}

}  // namespace

void run(std::string_view who, const GroupedNvfp4& raw, const Exec& exec) {
  validate(who, raw);
  const Backend backend = select_backend(who, exec.backend);
  GroupedNvfp4 args = with_max_rows(raw);
  if (backend == Backend::cpu) {
    validate_for_cpu(who, args);
    if (args.groups.m_total == 0 || args.groups.num_experts == 0) return;
    infer_a_rows(args);
    return cpu::nvfp4_grouped(args);
  }
  if (args.groups.m_total == 0 || args.groups.num_experts == 0) return;
  require_device(who, backend);
  [[maybe_unused]] const auto ws = select_workspace(
      who, exec, grouped_workspace_bytes(backend, args.groups, args.n, args.k, args.proj_count));
  switch (backend) {
#ifdef METRALE_HAS_CUDA
    case Backend::cuda: return cuda::nvfp4_grouped(args, ws, exec.stream);
    case Backend::cublaslt: return reference::cublaslt::nvfp4_grouped(args, ws, exec.stream);
#endif
#ifdef METRALE_HAS_CUTLASS
    case Backend::cutlass: return reference::cutlass::nvfp4_grouped(args, ws, exec.stream);
#endif
    default: fail(Status::internal, "{}: no dispatch for backend {}", who, backend_name(backend));
  }
}

std::size_t grouped_workspace_size(std::string_view who, Backend backend,
                                   const ExpertGroups& groups, int n, int k, int proj_count) {
  METRALE_REQUIRE(proj_count == 1 || proj_count == 2,
                  "{}: proj_count = {}, expected 1 (down) or 2 (gate and up)", who, proj_count);
  core::require_positive(who, "N", n);
  core::require_positive(who, "K", k);
  core::require_multiple_of(who, "K", k, 16);
  core::require_non_negative(who, "num_experts", groups.num_experts);
  core::require_non_negative(who, "M_total", groups.m_total);
  core::require_non_negative(who, "max_rows_per_expert", groups.max_rows_per_expert);
  ExpertGroups sized = groups;
  if (!groups.offsets_on_device && groups.offsets != nullptr) {
    // Size it exactly as run() will: from the host offsets' largest expert.
    const std::span<const std::int32_t> offsets(groups.offsets,
                                                static_cast<std::size_t>(groups.num_experts) + 1);
    core::ensure_group_arrays(who, groups.num_experts, {}, offsets);
    core::require_offsets_within(who, offsets, groups.m_total);
    GroupedNvfp4 probe{};
    probe.groups = groups;
    sized = with_max_rows(probe).groups;
  }
  return grouped_workspace_bytes(select_backend(who, backend), sized, n, k, proj_count);
}

}  // namespace metrale::api
