// The dense entries of the CUTLASS reference arm (sm_90a):
//   bf16_gemm   out[M,N] = act[M,K] · weight[N,K]ᵀ through CUTLASS's warp-specialized GEMM, with
//               the seeds' five tiles selectable and `automatic` choosing one by shape;
//   nvfp4_gemm  the same with weight = e2m1 · e4m3 · scale_2: the weight is dequantized to bf16
//               in the workspace (e2m1 · e4m3, exact), then the bf16 GEMM runs with the epilogue's
//               alpha = scale_2, so scale_2 is applied once, in fp32, as our kernels do;
//   gemm_workspace_size  what either call needs (the NVFP4 call's, the larger).
// Layouts: all row-major; the weight is CUTLASS's column-major K×N operand (the "TN" GEMM).
#include <algorithm>
#include <string>

#include "reference/cutlass/common.cuh"
#include "reference/cutlass/dequant.cuh"

namespace metrale::reference::cutlass {
namespace {

using detail::DenseLaunch;
using detail::DeviceInfo;

// Relative throughput of a full tile (bigger tiles reuse each loaded byte more): a guess from the
// shape of the tile, not a measurement; `metrale bench` times every tile explicitly.
double tile_efficiency(const detail::TileInfo& tile) {
  const int area = tile.m * tile.n;
  return area >= 128 * 256 ? 1.0 : area >= 128 * 64 ? 0.8 : 0.65;
}

// The tile with the least estimated time: waves of persistent CTAs × the tile's work per wave,
// divided by its efficiency. Small M or N gives small tiles and enough CTAs to fill the GPU;
// large problems give the 128x256 / 256x128 tiles (the longer side of the tile along the longer
// side of the problem on a tie).
Tile choose_tile(int m, int n, int sm_count) {
  const detail::TileInfo* best = nullptr;
  double best_cost = 0.0;
  for (const detail::TileInfo& tile : detail::kTiles) {
    const long long tiles = (static_cast<long long>(m) + tile.m - 1) / tile.m *
                            ((static_cast<long long>(n) + tile.n - 1) / tile.n);
    const long long waves = (tiles + sm_count - 1) / std::max(sm_count, 1);
    const double cost = static_cast<double>(waves) * tile.m * tile.n / tile_efficiency(tile);
    const bool tie_prefers = best != nullptr && cost == best_cost && (m > n) == (tile.m > tile.n);
    if (best == nullptr || cost < best_cost || tie_prefers) {
      best = &tile;
      best_cost = cost;
    }
  }
  return best->tile;
}

void run_tile(Tile tile, const DenseLaunch& launch) {
  switch (tile) {
    case Tile::m128n256: return detail::run_dense<Tile::m128n256>(launch);
    case Tile::m256n128: return detail::run_dense<Tile::m256n128>(launch);
    case Tile::m64n128: return detail::run_dense<Tile::m64n128>(launch);
    case Tile::m128n64: return detail::run_dense<Tile::m128n64>(launch);
    case Tile::m64n64: return detail::run_dense<Tile::m64n64>(launch);
    case Tile::automatic: break;
  }
  fail_message(Status::internal,
               concat(launch.who, " (CUTLASS): no kernel for tile value ", static_cast<int>(tile)));
}

std::size_t tile_workspace_size(Tile tile, int m, int n, int k, int sm_count) {
  switch (tile) {
    case Tile::m128n256: return detail::dense_workspace_size<Tile::m128n256>(m, n, k, sm_count);
    case Tile::m256n128: return detail::dense_workspace_size<Tile::m256n128>(m, n, k, sm_count);
    case Tile::m64n128: return detail::dense_workspace_size<Tile::m64n128>(m, n, k, sm_count);
    case Tile::m128n64: return detail::dense_workspace_size<Tile::m128n64>(m, n, k, sm_count);
    case Tile::m64n64: return detail::dense_workspace_size<Tile::m64n64>(m, n, k, sm_count);
    case Tile::automatic: break;
  }
  return 0;
}

std::string tile_label(const char* who, Tile tile) {
  return concat(who, " [tile ", detail::tile_info(tile).name, "]");
}

// The checks both dense entries make first, in this order: an sm_90 device, the TMA row shape,
// then act, the weight (bf16 rows: 16 bytes; packed rows read by the dequantizer: 8) and out.
DeviceInfo require_dense_call(const char* who, const void* act, const char* weight_name,
                              const void* weight, std::size_t weight_alignment, const void* out,
                              int n, int k) {
  const DeviceInfo device = detail::require_sm90(who);
  detail::require_tma_shape(who, n, k);
  detail::require_aligned(who, "act", act, 16);
  detail::require_aligned(who, weight_name, weight, weight_alignment);
  detail::require_aligned(who, "out", out, 16);
  return device;
}

}  // namespace

void bf16_gemm(const DenseGemm& args, core::Buffer ws, void* stream, Tile tile) {
  const char* who = "bf16_gemm_act_weight_t";
  if (args.m == 0) return;
  const DeviceInfo device =
      require_dense_call(who, args.act, "weight", args.weight, 16, args.out, args.n, args.k);
  if (tile == Tile::automatic) tile = choose_tile(args.m, args.n, device.sm_count);
  const std::string label = tile_label(who, tile);
  const DenseLaunch launch{
      args.act, args.weight,  args.out, args.m,  args.n,
      args.k,   1.0f,         ws.ptr,   ws.size, static_cast<cudaStream_t>(stream),
      device,   label.c_str()};
  run_tile(tile, launch);
}

void nvfp4_gemm(const Nvfp4Gemm& args, core::Buffer ws, void* stream) {
  const char* who = "nvfp4_gemm_bf16_act_weight_t";
  if (args.m == 0) return;
  const DeviceInfo device = require_dense_call(who, args.act, "weight_packed", args.packed, 8,
                                              args.out, args.n, args.k);
  const Tile tile = choose_tile(args.m, args.n, device.sm_count);
  const std::size_t weight_bytes = static_cast<std::size_t>(args.n) * args.k * sizeof(bf16_bits);
  detail::Carver carver(ws.ptr, ws.size);
  auto* weight = static_cast<bf16_bits*>(carver.take(weight_bytes));
  detail::require_workspace(
      who, carver.used() + tile_workspace_size(tile, args.m, args.n, args.k, device.sm_count),
      ws.size);

  const auto cu_stream = static_cast<cudaStream_t>(stream);
  detail::launch_dequantize(nullptr, 1, {args.packed, args.scale, weight}, args.n, args.k,
                            args.scale_layout, cu_stream);
  const std::string label = tile_label(who, tile);
  const DenseLaunch launch{args.act,      weight,    args.out,     args.m,
                           args.n,        args.k,    args.scale_2, carver.next(),
                           carver.left(), cu_stream, device,       label.c_str()};
  run_tile(tile, launch);
}

// One query serves both GEMMs (the contract has one): the NVFP4 call's dequantized weight plus the
// largest CUTLASS workspace of any tile, and the alignment slack. A bf16 call needs less.
std::size_t gemm_workspace_size(int m, int n, int k) {
  if (m <= 0 || n <= 0 || k <= 0) return 0;
  const int sm_count = detail::current_sm_count();
  std::size_t cutlass_bytes = 0;
  for (const detail::TileInfo& tile : detail::kTiles) {
    cutlass_bytes = std::max(cutlass_bytes, tile_workspace_size(tile.tile, m, n, k, sm_count));
  }
  return detail::kWorkspaceAlign +
         detail::align_up(static_cast<std::size_t>(n) * k * sizeof(bf16_bits)) +
         detail::align_up(cutlass_bytes);
}

}  // namespace metrale::reference::cutlass
