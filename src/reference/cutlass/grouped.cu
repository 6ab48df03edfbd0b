// The grouped NVFP4 MoE entry of the CUTLASS reference arm (sm_90a): nvfp4_grouped_gate_up /
// _fused / _down as one CUTLASS kGrouped bf16 launch over every (projection, active expert):
//   out[p][i, :] = a[row(i), :] · W_p[e(i)]ᵀ,  row(i) = token_ids ? token_ids[i] : i,
//   W = e2m1 · e4m3 · scale_2, dequantized to bf16 in the workspace (e2m1 · e4m3, exact) and
//   scale_2 applied as the group's alpha in the fp32 epilogue — the same math as ours, with 3.56x
//   the weight bytes. Gate and up go into the same launch as separate groups, each with its own
//   scale_2 (never merged).
// The workspace holds, in order: the dequantized weights, the gathered A rows (CUTLASS's sm90
// grouped GEMM loads A by TMA from one dense pointer per group and cannot gather rows), the
// staged per-group arrays, CUTLASS's workspace. Expert offsets must be host values: the launch
// needs each group's size on the host.
#include <algorithm>
#include <string>

#include "reference/cutlass/grouped_plan.hpp"

namespace metrale::reference::cutlass {
namespace {

using detail::GroupedCall;
using detail::GroupedTile;

// What a call stages, from the host offsets alone.
struct Plan {
  std::vector<int> experts;  // experts with rows, ascending
  int first_row = 0, rows_used = 0;
  int groups = 0;
  std::size_t weight_bytes = 0;  // one dequantized [N, K] bf16 weight
  GroupedTile tile = GroupedTile::m64n128;
};

Plan make_plan(const ExpertGroups& groups, int n, int k, int proj_count) {
  Plan plan;
  const std::int32_t* off = groups.offsets;
  if (groups.num_experts <= 0 || off == nullptr) return plan;
  for (int e = 0; e < groups.num_experts; ++e) {
    if (off[e + 1] > off[e]) plan.experts.push_back(e);
  }
  plan.first_row = off[0];
  plan.rows_used = off[groups.num_experts] - off[0];
  plan.groups = proj_count * static_cast<int>(plan.experts.size());
  plan.weight_bytes = static_cast<std::size_t>(n) * k * sizeof(bf16_bits);
  // Decode-sized groups (a few rows per expert) waste most of a 128-row tile: 64x128 ping-pong.
  const bool small_groups =
      plan.experts.empty() || plan.rows_used <= 64 * static_cast<long long>(plan.experts.size());
  plan.tile = small_groups ? GroupedTile::m64n128 : GroupedTile::m128n256;
  return plan;
}

std::size_t extra_bytes(const Plan& plan, int sm_count) {
  return plan.tile == GroupedTile::m64n128
             ? detail::grouped_extra_bytes<GroupedTile::m64n128>(plan.groups, sm_count)
             : detail::grouped_extra_bytes<GroupedTile::m128n256>(plan.groups, sm_count);
}

std::size_t plan_bytes(const Plan& plan, int k, bool gather, int sm_count) {
  return detail::kWorkspaceAlign +
         detail::align_up(plan.weight_bytes * static_cast<std::size_t>(plan.groups)) +
         (gather
              ? detail::align_up(static_cast<std::size_t>(plan.rows_used) * k * sizeof(bf16_bits))
              : 0) +
         extra_bytes(plan, sm_count);
}

const char* grouped_name(const GroupedNvfp4& args) {
  if (args.proj_count == 1) return "nvfp4_grouped_down";
  return args.token_ids != nullptr ? "nvfp4_grouped_gate_up_fused" : "nvfp4_grouped_gate_up";
}

void refuse_device_offsets_and_capture(const char* who, const GroupedNvfp4& args,
                                       cudaStream_t stream) {
  if (args.groups.offsets_on_device) {
    fail_message(Status::unsupported,
                 concat(who,
                        " (CUTLASS): expert offsets on the device are not supported: "
                        "CUTLASS's grouped GEMM takes each group's size, pointers and alpha from "
                        "arrays staged on the host before the launch, so device offsets would "
                        "need a copy back and a host synchronisation; pass host offsets"));
  }
  cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
  METRALE_CUDA_CHECK(cudaStreamIsCapturing(stream, &capture));
  if (capture != cudaStreamCaptureStatusNone) {
    fail_message(Status::unsupported,
                 concat(who,
                        " (CUTLASS): cannot be captured in a CUDA graph: the per-group "
                        "arrays are uploaded from a reused pinned host buffer, which a graph "
                        "replay would read again after it has been overwritten"));
  }
}

// One entry per (projection, active expert): gate's experts, then up's.
void fill_entries(GroupedCall& call, const GroupedNvfp4& args, const Plan& plan,
                  bf16_bits* weights) {
  const std::int32_t* off = args.groups.offsets;
  const auto n = static_cast<std::size_t>(args.n);
  const auto k = static_cast<std::size_t>(args.k);
  call.entries.reserve(plan.groups);
  for (int p = 0; p < args.proj_count; ++p) {
    const ExpertWeights& w = args.proj[p];
    for (const int e : plan.experts) {
      if (w.packed_ptrs[e] % 8 != 0) {  // the dequantization reads 8 bytes at a time
        fail_message(Status::unsupported,
                     concat(call.who, " (CUTLASS): proj[", p, "].packed_ptrs[", e, "] = 0x",
                            std::hex, w.packed_ptrs[e], " is not 8-byte aligned"));
      }
      detail::GroupEntry entry{};
      entry.rows = off[e + 1] - off[e];
      entry.a = call.gathered != nullptr ? call.gathered + (off[e] - off[0]) * k
                                         : args.a + static_cast<std::size_t>(off[e]) * k;
      entry.d = args.out[p] + static_cast<std::size_t>(off[e]) * n;
      entry.alpha = w.scale2_vals[e];
      entry.job.packed = reinterpret_cast<const std::uint8_t*>(w.packed_ptrs[e]);
      entry.job.scale = reinterpret_cast<const std::uint8_t*>(w.scale_ptrs[e]);
      entry.job.out = weights + call.entries.size() * n * k;
      call.entries.push_back(entry);
    }
  }
}

}  // namespace

void nvfp4_grouped(const GroupedNvfp4& args, core::Buffer ws, void* stream) {
  const char* who = grouped_name(args);
  const auto cu_stream = static_cast<cudaStream_t>(stream);
  refuse_device_offsets_and_capture(who, args, cu_stream);
  const detail::DeviceInfo device = detail::require_sm90(who);
  detail::require_tma_shape(who, args.n, args.k);
  detail::require_aligned(who, "a", args.a, 16);
  for (int p = 0; p < args.proj_count; ++p) detail::require_aligned(who, "out", args.out[p], 16);
  const Plan plan = make_plan(args.groups, args.n, args.k, args.proj_count);
  if (plan.groups == 0) return;  // no expert has rows: nothing to write
  const bool gather = args.token_ids != nullptr;
  detail::require_workspace(who, plan_bytes(plan, args.k, gather, device.sm_count), ws.size);

  GroupedCall call;
  call.who = who;
  call.device = device;
  call.stream = cu_stream;
  call.groups = plan.groups;
  call.n = args.n;
  call.k = args.k;
  call.layout = args.scale_layout;
  call.a = args.a;
  call.a_rows = args.a_rows;
  call.token_ids = args.token_ids;
  call.first_row = plan.first_row;
  call.rows_used = plan.rows_used;

  detail::Carver carver(ws.ptr, ws.size);
  auto* weights = static_cast<bf16_bits*>(
      carver.take(plan.weight_bytes * static_cast<std::size_t>(plan.groups)));
  if (gather) {
    call.gathered = static_cast<bf16_bits*>(
        carver.take(static_cast<std::size_t>(plan.rows_used) * args.k * sizeof(bf16_bits)));
  }
  fill_entries(call, args, plan, weights);
  if (plan.tile == GroupedTile::m64n128) {
    detail::run_grouped<GroupedTile::m64n128>(call, carver);
  } else {
    detail::run_grouped<GroupedTile::m128n256>(call, carver);
  }
}

// The bytes the call above carves, for host offsets. Assumes a row gather (a call without
// token_ids uses rows_used · K · 2 bytes less). Device offsets: 0, since the call is refused
// with a message saying why (a size here would only make the API refuse it first, less clearly).
std::size_t nvfp4_grouped_workspace_size(const ExpertGroups& groups, int n, int k, int proj_count) {
  if (groups.offsets_on_device || n <= 0 || k <= 0) return 0;
  const Plan plan = make_plan(groups, n, k, proj_count);
  if (plan.groups == 0) return 0;
  return plan_bytes(plan, k, /*gather=*/true, detail::current_sm_count());
}

}  // namespace metrale::reference::cutlass
