// The bench's bf16-grouped opponent (bf16_grouped.hpp): a GroupedCall over the caller's bf16
// weights, staged once by the CUTLASS grouped machinery of the reference arm (grouped_kernel.cuh)
// and launched alone on every run(). Only the kernel choice and the checks are its own.
#include <string>

#include "reference/cutlass/bf16_grouped.hpp"
#include "reference/cutlass/grouped_plan.hpp"

namespace metrale::reference::cutlass {
namespace {

using detail::GroupedTile;

constexpr const char* kWho = "bf16_grouped";
// torch._grouped_mm's threshold between its two sm90 kernels (rows per group on average, or N).
constexpr long long kSmallGroupRows = 128;

GroupedTile tile_of(Bf16GroupedKernel kernel) {
  return kernel == Bf16GroupedKernel::pingpong_64x128x128 ? GroupedTile::m64n128k128_cluster2
                                                          : GroupedTile::m128n256_cluster2;
}

int groups_with_rows(const Bf16Grouped& args) {
  int count = 0;
  for (const Bf16Group& g : args.groups) count += g.rows > 0;
  return count;
}

std::size_t extra_bytes(GroupedTile tile, int groups, int sm_count) {
  return tile == GroupedTile::m64n128k128_cluster2
             ? detail::grouped_extra_bytes<GroupedTile::m64n128k128_cluster2>(groups, sm_count)
             : detail::grouped_extra_bytes<GroupedTile::m128n256_cluster2>(groups, sm_count);
}

void validate(const Bf16Grouped& args) {
  detail::require_tma_shape(kWho, args.n, args.k);
  if (args.n <= 0 || args.k <= 0) {
    fail_message(Status::invalid_argument,
                 concat(kWho, ": N = ", args.n, " and K = ", args.k, " must be positive"));
  }
  for (std::size_t i = 0; i < args.groups.size(); ++i) {
    const Bf16Group& g = args.groups[i];
    if (g.rows < 0) {
      fail_message(Status::invalid_argument,
                   concat(kWho, ": groups[", i, "].rows = ", g.rows, " is negative"));
    }
    if (g.rows == 0) continue;
    const std::string at = concat("groups[", i, "]");
    if (g.a == nullptr || g.b == nullptr || g.d == nullptr) {
      fail_message(Status::invalid_argument,
                   concat(kWho, ": ", at, " has ", g.rows, " rows but a null a, b or d"));
    }
    detail::require_aligned(kWho, (at + ".a").c_str(), g.a, 16);
    detail::require_aligned(kWho, (at + ".b").c_str(), g.b, 16);
    detail::require_aligned(kWho, (at + ".d").c_str(), g.d, 16);
  }
}

}  // namespace

Bf16GroupedKernel bf16_grouped_kernel(const Bf16Grouped& args) {
  if (args.kernel != Bf16GroupedKernel::automatic) return args.kernel;
  // Like torch: the average over every group given, empty ones included (torch divides by the
  // expert count; at prefill every expert has rows and the two agree).
  long long rows = 0;
  for (const Bf16Group& g : args.groups) rows += g.rows;
  const auto groups = static_cast<long long>(args.groups.size());
  const bool small = rows <= kSmallGroupRows * groups || args.n <= kSmallGroupRows;
  return small ? Bf16GroupedKernel::pingpong_64x128x128 : Bf16GroupedKernel::cooperative_128x256x64;
}

const char* bf16_grouped_kernel_name(Bf16GroupedKernel kernel) {
  switch (kernel) {
    case Bf16GroupedKernel::pingpong_64x128x128:
      return "CUTLASS sm90 ptr-array grouped, 64x128x128 ping-pong, cluster 2x1";
    case Bf16GroupedKernel::cooperative_128x256x64:
      return "CUTLASS sm90 ptr-array grouped, 128x256x64 cooperative, cluster 2x1";
    case Bf16GroupedKernel::automatic: break;
  }
  return "CUTLASS sm90 ptr-array grouped, automatic";
}

std::size_t bf16_grouped_workspace_size(const Bf16Grouped& args) {
  const int groups = groups_with_rows(args);
  if (groups == 0) return 0;
  return detail::kWorkspaceAlign +
         extra_bytes(tile_of(bf16_grouped_kernel(args)), groups, detail::current_sm_count());
}

struct Bf16GroupedPlan::Staged {
  detail::GroupedCall call;
  detail::StagedRegions regions;
  Bf16GroupedKernel kernel = Bf16GroupedKernel::automatic;
};

Bf16GroupedPlan::Bf16GroupedPlan(const Bf16Grouped& args, core::Buffer ws, void* stream)
    : staged_(std::make_unique<Staged>()) {
  validate(args);
  Staged& s = *staged_;
  s.kernel = bf16_grouped_kernel(args);
  detail::GroupedCall& call = s.call;
  call.who = kWho;
  call.device = detail::require_sm90(kWho);
  call.stream = static_cast<cudaStream_t>(stream);
  call.n = args.n;
  call.k = args.k;
  for (const Bf16Group& g : args.groups) {
    if (g.rows == 0) continue;
    detail::GroupEntry entry{};
    entry.rows = g.rows;
    entry.a = g.a;
    entry.d = g.d;
    entry.alpha = 1.0f;
    entry.job.out = const_cast<bf16_bits*>(g.b);  // only read: the kernel's B operand
    call.entries.push_back(entry);
    call.rows_used += g.rows;
  }
  call.groups = static_cast<int>(call.entries.size());
  if (call.groups == 0) return;

  detail::require_workspace(kWho, bf16_grouped_workspace_size(args), ws.size);
  detail::Carver carver(ws.ptr, ws.size);
  s.regions = tile_of(s.kernel) == GroupedTile::m64n128k128_cluster2
                  ? detail::stage_grouped<GroupedTile::m64n128k128_cluster2>(call, carver)
                  : detail::stage_grouped<GroupedTile::m128n256_cluster2>(call, carver);
  // run() may use another stream: the arrays must be on the device before it returns.
  METRALE_CUDA_CHECK(cudaStreamSynchronize(call.stream));
}

Bf16GroupedPlan::~Bf16GroupedPlan() = default;
Bf16GroupedPlan::Bf16GroupedPlan(Bf16GroupedPlan&&) noexcept = default;
Bf16GroupedPlan& Bf16GroupedPlan::operator=(Bf16GroupedPlan&&) noexcept = default;

void Bf16GroupedPlan::run(void* stream) const {
  const Staged& s = *staged_;
  if (s.call.groups == 0) return;
  const auto cu_stream = static_cast<cudaStream_t>(stream);
  if (tile_of(s.kernel) == GroupedTile::m64n128k128_cluster2) {
    detail::launch_staged<GroupedTile::m64n128k128_cluster2>(s.call, s.regions, cu_stream);
  } else {
    detail::launch_staged<GroupedTile::m128n256_cluster2>(s.call, s.regions, cu_stream);
  }
}

Bf16GroupedKernel Bf16GroupedPlan::kernel() const {
  return staged_->kernel;
}

}  // namespace metrale::reference::cutlass
