// Host launcher of the sm_90a GEMM kernel: checks what the kernel needs beyond the API's
// validation (K alignment, 16-byte pointers, the expert table's capacity), picks a tile from
// kTiles, fills the parameter block and launches on the caller's stream. Implements
// metrale::cuda::bf16_gemm, nvfp4_gemm and nvfp4_grouped; none of them needs workspace.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>

#include "core/config.hpp"
#include "core/error.hpp"
#include "cuda/cuda_backend.hpp"
#include "cuda/cuda_check.hpp"
#include "cuda/require_device.hpp"
#include "cuda/sm90/grouped_gemm_params.hpp"

namespace metrale::cuda {
namespace {

using sm90::GroupedParams;
using sm90::kMaxExperts;
using sm90::kTiles;

// The smallest tile holding twice the mean rows of an active expert. Routing is uneven, so a
// tile sized to the mean splits the busier experts in two and reads their weights twice; the 2x
// was measured (docs/perf.md, "tile choice": `METRALE_SM90_TILE=i metrale bench --impls metrale`
// over the four presets, T = 1..4096): on all 40 shapes it picks a tile within 5 % of the fastest,
// where sizing to the mean lost up to 1.3x at 16-32 rows per expert.
int pick_tile(double rows_per_expert) {
  if (const auto forced = core::forced_sm90_tile(sm90::kTileCount)) return *forced;
  for (int i = 0; i < sm90::kTileCount; ++i)
    if (2 * rows_per_expert <= kTiles[i].tokens) return i;
  return sm90::kTileCount - 1;
}

bool aligned16(const void* ptr) {
  return reinterpret_cast<std::uintptr_t>(ptr) % kPointerAlignment == 0;
}

void require_k_multiple(const char* op, int k, int multiple, const char* why) {
  if (k % multiple != 0)
    fail(Status::unsupported, "{}: K = {} is not a multiple of {} ({})", op, k, multiple,
         why);
}

// A launch: the parameter block plus what sizes the grid.
struct Launch {
  GroupedParams params{};
  bool nvfp4 = true;
  int proj_count = 1;
  int tile = 0;
  int row_tiles = 0;  // exact (host offsets) or an upper bound (device offsets)
};

void run(const char* op, const Launch& l, void* stream) {
  const GroupedParams& p = l.params;
  if (l.row_tiles == 0) return;
  const int rows_per_cta = kTiles[l.tile].weight_rows;
  const dim3 grid((p.n + rows_per_cta - 1) / rows_per_cta, l.row_tiles, l.proj_count);
  if (grid.y > 65535)
    fail(Status::unsupported, "{}: {} row tiles exceed the grid limit of 65535", op, grid.y);
  METRALE_CUDA_CHECK(sm90::launch_grouped_gemm(l.tile, l.nvfp4, p, grid,
                                               static_cast<cudaStream_t>(stream)));
}

// The single GEMMs: one expert owning rows [0, m) of `act`, one projection writing `out`.
Launch single_gemm(const std::uint16_t* act, std::uint16_t* out, int m, int n, int k) {
  Launch l;
  l.params.a = act;
  l.params.n = n;
  l.params.k = k;
  l.params.out[0] = out;
  l.params.num_experts = 1;
  l.params.host_offsets[0] = 0;
  l.params.host_offsets[1] = m;
  l.tile = pick_tile(m);
  l.row_tiles = (m + kTiles[l.tile].tokens - 1) / kTiles[l.tile].tokens;
  return l;
}

// Fills the per-expert tables of projection j and checks the pointers of experts with rows.
void fill_projection(const char* op, const GroupedNvfp4& args, int j, GroupedParams& p) {
  const ExpertGroups& groups = args.groups;
  const ExpertWeights& w = args.proj[j];
  for (int e = 0; e < groups.num_experts; ++e) {
    const void* packed = reinterpret_cast<const void*>(w.packed_ptrs[e]);
    const auto* scale = reinterpret_cast<const std::uint8_t*>(w.scale_ptrs[e]);
    const bool has_rows = groups.offsets_on_device || groups.offsets[e + 1] > groups.offsets[e];
    if (has_rows) {
      require_aligned_16(op, fmt::format("proj[{}].packed_ptrs[{}]", j, e), packed);
      if (p.scale_sfb) require_aligned_16(op, fmt::format("proj[{}].scale_ptrs[{}]", j, e), scale);
      p.scale_vec16 = p.scale_vec16 && aligned16(scale);
    }
    p.proj[j].weight[e] = packed;
    p.proj[j].scale[e] = scale;
    p.proj[j].scale_2[e] = w.scale2_vals[e];
  }
}

// Tile and grid extent from the routing: exact for host offsets; for device offsets, bounds
// from m_total and max_rows_per_expert (nothing here may read the offsets).
void plan_rows(const ExpertGroups& groups, Launch& l) {
  const int experts = groups.num_experts;
  if (groups.offsets_on_device) {
    l.params.device_offsets = groups.offsets;
    l.params.row_limit = groups.m_total;
    const int spread = std::max(1, std::min(experts, groups.m_total));
    l.tile = pick_tile(std::min<double>(groups.max_rows_per_expert,
                                        static_cast<double>(groups.m_total) / spread));
    const long tokens = kTiles[l.tile].tokens;
    const long by_rows = (groups.m_total + tokens - 1) / tokens + experts;
    const long by_bound = experts * ((groups.max_rows_per_expert + tokens - 1) / tokens);
    l.row_tiles = static_cast<int>(std::min(by_rows, by_bound));
    return;
  }
  std::memcpy(l.params.host_offsets, groups.offsets, sizeof(std::int32_t) * (experts + 1));
  int active = 0;
  for (int e = 0; e < experts; ++e) active += groups.offsets[e + 1] > groups.offsets[e];
  const int rows = groups.offsets[experts] - groups.offsets[0];
  l.tile = pick_tile(active ? static_cast<double>(rows) / active : 1.0);
  const int tokens = kTiles[l.tile].tokens;
  l.row_tiles = 0;
  for (int e = 0; e < experts; ++e)
    l.row_tiles += (groups.offsets[e + 1] - groups.offsets[e] + tokens - 1) / tokens;
}

}  // namespace

void bf16_gemm(const DenseGemm& args, Workspace, void* stream) {
  constexpr const char* kOp = "bf16_gemm_act_weight_t (CUDA)";
  require_device(kOp);
  require_k_multiple(kOp, args.k, 8, "rows are loaded 16 bytes at a time");
  require_aligned_16(kOp, "act", args.act);
  require_aligned_16(kOp, "weight", args.weight);
  Launch l = single_gemm(args.act, args.out, args.m, args.n, args.k);
  l.nvfp4 = false;
  l.params.proj[0].weight[0] = args.weight;
  l.params.proj[0].scale_2[0] = 1.0f;
  run(kOp, l, stream);
}

void nvfp4_gemm(const Nvfp4Gemm& args, Workspace, void* stream) {
  constexpr const char* kOp = "nvfp4_gemm_bf16_act_weight_t (CUDA)";
  require_device(kOp);
  require_k_multiple(kOp, args.k, 32, "packed rows are loaded 16 bytes at a time");
  require_aligned_16(kOp, "act", args.act);
  require_aligned_16(kOp, "packed", args.packed);
  if (args.scale_layout == ScaleLayout::sfb) require_aligned_16(kOp, "scale", args.scale);
  Launch l = single_gemm(args.act, args.out, args.m, args.n, args.k);
  GroupedParams& p = l.params;
  p.scale_sfb = args.scale_layout == ScaleLayout::sfb;
  p.scale_vec16 = args.n % 16 == 0 && aligned16(args.scale);
  p.proj[0].weight[0] = args.packed;
  p.proj[0].scale[0] = args.scale;
  p.proj[0].scale_2[0] = args.scale_2;
  run(kOp, l, stream);
}

void nvfp4_grouped(const GroupedNvfp4& args, Workspace, void* stream) {
  constexpr const char* kOp = "nvfp4_grouped (CUDA)";
  require_device(kOp);
  const ExpertGroups& groups = args.groups;
  if (groups.num_experts > kMaxExperts)
    fail(Status::unsupported, "{}: num_experts = {} exceeds the sm90 kernel's limit of {}",
         kOp, groups.num_experts, kMaxExperts);
  require_k_multiple(kOp, args.k, 32, "packed rows are loaded 16 bytes at a time");
  if (groups.num_experts == 0 || groups.m_total == 0) return;
  require_aligned_16(kOp, "a", args.a);
  Launch l;
  GroupedParams& p = l.params;
  p.a = args.a;
  p.token_ids = args.token_ids;
  p.a_rows = args.a_rows;
  p.n = args.n;
  p.k = args.k;
  p.num_experts = groups.num_experts;
  p.scale_sfb = args.scale_layout == ScaleLayout::sfb;
  p.scale_vec16 = args.n % 16 == 0;
  l.proj_count = args.proj_count;
  for (int j = 0; j < args.proj_count; ++j) {
    p.out[j] = args.out[j];
    fill_projection(kOp, args, j, p);
  }
  plan_rows(groups, l);
  run(kOp, l, stream);
}

std::size_t nvfp4_grouped_workspace_size(const ExpertGroups&, int, int, int) { return 0; }

}  // namespace metrale::cuda
