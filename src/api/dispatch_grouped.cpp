// Dispatch of the grouped (per-expert) NVFP4 GEMMs: down (one projection), gate/up (two), with
// [K/16, N] or SFB scales, rows gathered through token ids or not, offsets on the host or the
// device. With host offsets the API fills in max_rows_per_expert, so every backend can size its
// launch from it whichever side the offsets live on.
#include <algorithm>
#include <cstdint>

#include "api/backends.hpp"
#include "api/dispatch.hpp"
#include "api/select.hpp"
#include "api/validate.hpp"
#include "core/error.hpp"
#include "core/validate.hpp"
#include "metrale/metrale.h"

namespace metrale::api {

namespace {

// With host offsets, max_rows_per_expert is their largest expert (the caller's value is not
// read); device offsets keep the caller's bound.
ExpertGroups with_max_rows(const ExpertGroups& groups) {
  ExpertGroups out = groups;
  if (!groups.offsets_on_device) {
    std::int32_t max_rows = 0;
    for (std::int32_t e = 0; e < groups.num_experts; ++e) {
      max_rows = std::max(max_rows, groups.offsets[e + 1] - groups.offsets[e]);
    }
    out.max_rows_per_expert = max_rows;
  }
  return out;
}

// a_rows = 0 means "unknown" (the seeds' fused call does not carry the token count). On the host
// the ids themselves bound it: after validate_for_cpu every id read is in [0, INT32_MAX), so a
// holds at least max id + 1 rows (an int32), and the CPU backend gets a bound it can check every
// read against. The sum is taken in 64 bits all the same: an id of INT32_MAX must never wrap.
void infer_a_rows(GroupedNvfp4& args) {
  if (args.token_ids == nullptr || args.a_rows > 0) return;
  std::int64_t rows = 0;
  for (std::int32_t i = args.groups.offsets[0]; i < args.groups.offsets[args.groups.num_experts];
       ++i) {
    rows = std::max(rows, std::int64_t{args.token_ids[i]} + 1);
  }
  args.a_rows = static_cast<std::int32_t>(std::min<std::int64_t>(rows, INT32_MAX));
}

// The reference arms decode the seeds' packed layout only. The C ABI carries the layout as a
// flag of scale_layout, the C++ API as weight_layout: the message names what the caller set.
void refuse_prepacked_on_reference(std::string_view who, Backend backend,
                                   const GroupedNvfp4& args) {
  if (args.weight_layout != WeightLayout::prepacked) return;
  if (backend != Backend::cutlass && backend != Backend::cublaslt) return;
  const std::string_view reference = backend == Backend::cutlass ? "CUTLASS" : "cuBLASLt";
  if (who.starts_with("metrale_")) {
    fail(Status::unsupported,
         "{}: scale_layout = {} has METRALE_WEIGHTS_PREPACKED: the {} reference reads the packed "
         "layout only; unprepack the weights (metrale_unprepack_nvfp4_ex)",
         who, static_cast<int>(args.scale_layout) | METRALE_WEIGHTS_PREPACKED, reference);
  }
  fail(Status::unsupported,
       "{}: weight_layout = 1 (prepacked): the {} reference reads the packed layout only; "
       "unprepack the weights (prepack_nvfp4 with PrepackDir::to_packed)",
       who, reference);
}

}  // namespace

void run(std::string_view who, const GroupedNvfp4& raw, const Exec& exec) {
  validate(who, raw);
  const Backend backend = select_backend(who, exec.backend);
  refuse_prepacked_on_reference(who, backend, raw);
  GroupedNvfp4 args = raw;
  args.groups = with_max_rows(raw.groups);
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
    default: no_dispatch(who, backend);
  }
}

void grouped_workspace_size(std::string_view who, Backend backend, const ExpertGroups& groups,
                            int n, int k, int proj_count, std::size_t* bytes) {
  core::require_not_null(who, "bytes", bytes);
  require_proj_count(who, proj_count);
  require_grouped_dims(who, groups, n, k);
  // Size it exactly as run() will: from the host offsets' largest expert, else from the bound.
  const bool host_offsets = !groups.offsets_on_device && groups.offsets != nullptr;
  if (host_offsets)
    require_host_offsets(who, groups);
  else
    require_row_bound(who, groups);
  *bytes = grouped_workspace_bytes(select_backend(who, backend),
                                   host_offsets ? with_max_rows(groups) : groups, n, k, proj_count);
}

}  // namespace metrale::api
