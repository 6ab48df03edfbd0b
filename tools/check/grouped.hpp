// The data of a grouped (per-expert) check, shared by run_case and the GPU tests that build
// their own grouped calls (per-expert vs single GEMM, fused vs per-expert, CUDA-graph capture):
//   gate_up  two projections, [K/16, N] scales, a = [M_total, K] rows already in group order
//   fused    two projections, SFB scales, a = [T, K] tokens gathered through sorted_token_ids
//   down     one projection, SFB scales, a = [M_total, K] in group order
// Weights: a pool of P distinct packed tensors per projection (P = E unless E·N·K would exceed
// kPoolElementBudget, then fewer, at least 1); expert e uses pool member e % P with its own
// scale_2 (exact mode: 2^-(3 + e % 6); realistic: the packer's scale_2 × (1 + (37e % 2048)/1024),
// a different factor for each of up to 2048 experts), so experts that share weights still give
// different outputs and, in realistic mode, a mix-up of any two experts shows (in exact mode,
// experts e and e + 6 of one pool member share their scale_2: the grid allows few powers of two).
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "check/check.hpp"
#include "check/compare.hpp"
#include "check/routing.hpp"
#include "check/weights.hpp"

#ifdef METRALE_HAS_CUDA
#include "check/buffers.hpp"
#endif

namespace metrale::check {

inline constexpr std::int64_t kPoolElementBudget = std::int64_t{1} << 26;

struct GroupedHost {
  Op op = Op::grouped_gate_up;
  Mode mode = Mode::exact;
  std::int32_t n = 0, k = 0;
  std::int32_t proj_count = 2;
  ScaleLayout layout = ScaleLayout::k16_by_n;
  bool gather = false;  // a holds tokens, rows come through token ids
  RoutingPlan routing;
  std::int32_t a_rows = 0;
  std::vector<bf16_bits> a;                       // [a_rows, K]
  std::array<std::vector<PackedWeight>, 2> pool;  // per projection
  std::vector<std::int32_t> pool_of_expert;
  std::array<std::vector<float>, 2> scale2;  // per projection, per expert
};

// Everything but the routing comes from the case; the routing from make_routing(c.routing).
GroupedHost make_grouped_host(const Case& c);
// The same inputs with another routing (same tokens, experts and top_k: a stays valid).
void reroute(GroupedHost& h, const RoutingPlan& routing);

// Per-expert pointer arrays (uint64 addresses) of one memory space.
struct ExpertPointers {
  std::array<std::vector<std::uint64_t>, 2> packed, scale;
};

// The call's arguments over the given memory (host or device).
GroupedNvfp4 grouped_args(const GroupedHost& h, const ExpertPointers& ptrs, const bf16_bits* a,
                          std::int32_t a_rows, const std::int32_t* token_ids,
                          const ExpertGroups& groups, std::array<bf16_bits*, 2> out);

// The CPU oracle on group rows `rows` (ascending): out[p] is [rows, N]. With `absolute` it runs
// on |a| and |w| instead (the S of the tolerance).
std::array<std::vector<bf16_bits>, 2> grouped_oracle(const GroupedHost& h,
                                                     const std::vector<std::int64_t>& rows,
                                                     bool absolute);

#ifdef METRALE_HAS_CUDA
struct GroupedDevice {
  DeviceBuffer a, token_ids, offsets;
  std::array<std::vector<DeviceBuffer>, 2> packed, scale;
  std::array<DeviceBuffer, 2> out;  // [M_total, N], NaN-poisoned
  ExpertPointers ptrs;              // device addresses per expert
  std::vector<const DeviceBuffer*> all() const;
};

// Uploads a, token ids (fused), offsets (for device-side offsets) and the weight pool; allocates
// and poisons the outputs.
GroupedDevice upload_grouped(const GroupedHost& h);
// Writes h's current routing into d's token-id and offset buffers (same sizes).
void upload_routing(const GroupedHost& h, GroupedDevice& d);

// The call on device memory; offsets from the host array, or from d.offsets when
// offsets_on_device (then max_rows_per_expert = max_rows, a bound on every expert's rows).
GroupedNvfp4 device_args(const GroupedHost& h, GroupedDevice& d, bool offsets_on_device,
                         std::int32_t max_rows);
#endif

}  // namespace metrale::check
