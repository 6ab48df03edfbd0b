// The Hopper (sm_90a) warp-specialized bf16 GEMM of CUTLASS 3.x, as the reference arm builds it:
//   D[M,N] = alpha · A[M,K] · B[N,K]ᵀ   A = act (row-major, K contiguous),
//                                         B = weight [N,K] = CUTLASS's column-major K×N ("TN"),
//                                         D bf16 row-major, fp32 accumulation, no C operand.
// The mainloop and the epilogue come from CUTLASS's collective builders (TMA loads, wgmma, TMA
// store). A tile with M >= 128 uses the cooperative schedule (two consumer warpgroups split the
// tile along M); a 64-row tile uses ping-pong (two consumer warpgroups alternate whole tiles),
// because cooperative needs at least 64 rows per warpgroup. Cluster 1x1x1: decode shapes have a
// single M tile, and a 2-CTA cluster along M would leave half of each cluster idle.
// Included only by gemm_tiles_*.cu, each of which instantiates its tiles once.
#pragma once

#include <cute/tensor.hpp>
#include <cutlass/epilogue/collective/collective_builder.hpp>
#include <cutlass/gemm/collective/collective_builder.hpp>
#include <cutlass/gemm/device/gemm_universal_adapter.h>
#include <cutlass/gemm/dispatch_policy.hpp>
#include <cutlass/gemm/kernel/gemm_universal.hpp>
#include <cutlass/util/packed_stride.hpp>

#include "reference/cutlass/common.cuh"

namespace metrale::reference::cutlass::detail {

// The bf16 operands and output need 16-byte rows for TMA: 8 elements.
inline constexpr int kBf16Alignment = 8;

template <int kTileM, int kTileN>
struct DenseKernel {
  static constexpr bool kCooperative = kTileM >= 128;
  using TileShape = cute::Shape<cute::Int<kTileM>, cute::Int<kTileN>, cute::_64>;
  using ClusterShape = cute::Shape<cute::_1, cute::_1, cute::_1>;
  using MainloopSchedule =
      cute::conditional_t<kCooperative, ::cutlass::gemm::KernelTmaWarpSpecializedCooperative,
                          ::cutlass::gemm::KernelTmaWarpSpecializedPingpong>;
  using EpilogueSchedule =
      cute::conditional_t<kCooperative, ::cutlass::epilogue::TmaWarpSpecializedCooperative,
                          ::cutlass::epilogue::TmaWarpSpecialized>;

  // ElementC = void: no source operand is read; the builder's default fusion is then
  // D = alpha · acc, computed in fp32 and rounded to bf16 (nearest even) once.
  using Epilogue = typename ::cutlass::epilogue::collective::CollectiveBuilder<
      ::cutlass::arch::Sm90, ::cutlass::arch::OpClassTensorOp, TileShape, ClusterShape,
      ::cutlass::epilogue::collective::EpilogueTileAuto, float, float, void,
      ::cutlass::layout::RowMajor, kBf16Alignment, ::cutlass::bfloat16_t,
      ::cutlass::layout::RowMajor, kBf16Alignment, EpilogueSchedule>::CollectiveOp;

  using Mainloop = typename ::cutlass::gemm::collective::CollectiveBuilder<
      ::cutlass::arch::Sm90, ::cutlass::arch::OpClassTensorOp, ::cutlass::bfloat16_t,
      ::cutlass::layout::RowMajor, kBf16Alignment, ::cutlass::bfloat16_t,
      ::cutlass::layout::ColumnMajor, kBf16Alignment, float, TileShape, ClusterShape,
      ::cutlass::gemm::collective::StageCountAutoCarveout<static_cast<int>(
          sizeof(typename Epilogue::SharedStorage))>,
      MainloopSchedule>::CollectiveOp;

  using Kernel =
      ::cutlass::gemm::kernel::GemmUniversal<cute::Shape<int, int, int, int>, Mainloop, Epilogue>;
  using Gemm = ::cutlass::gemm::device::GemmUniversalAdapter<Kernel>;
};

template <class Gemm>
typename Gemm::Arguments dense_arguments(const DenseLaunch& launch) {
  using Kernel = typename Gemm::GemmKernel;
  const auto stride_a =
      ::cutlass::make_cute_packed_stride(typename Kernel::StrideA{}, {launch.m, launch.k, 1});
  const auto stride_b =
      ::cutlass::make_cute_packed_stride(typename Kernel::StrideB{}, {launch.n, launch.k, 1});
  const auto stride_d =
      ::cutlass::make_cute_packed_stride(typename Kernel::StrideD{}, {launch.m, launch.n, 1});
  ::cutlass::KernelHardwareInfo hw_info;
  hw_info.device_id = launch.device.device;
  hw_info.sm_count = launch.device.sm_count;

  typename Gemm::Arguments args{
      ::cutlass::gemm::GemmUniversalMode::kGemm,
      {launch.m, launch.n, launch.k, 1},
      {static_cast<const ::cutlass::bfloat16_t*>(launch.a), stride_a,
       static_cast<const ::cutlass::bfloat16_t*>(launch.b), stride_b},
      {{}, nullptr, stride_d, static_cast<::cutlass::bfloat16_t*>(launch.d), stride_d},
      hw_info};
  args.epilogue.thread.alpha = launch.alpha;
  args.epilogue.thread.beta = 0.0f;
  return args;
}

// can_implement -> get_workspace_size -> initialize (on the caller's workspace and stream) -> run.
template <int kTileM, int kTileN>
void run_dense_kernel(const DenseLaunch& launch) {
  using Gemm = typename DenseKernel<kTileM, kTileN>::Gemm;
  typename Gemm::Arguments args = dense_arguments<Gemm>(launch);
  const int m = launch.m, n = launch.n, k = launch.k;
  check_cutlass(Gemm::can_implement(args), Status::unsupported, launch.who, "can_implement", m, n,
                k);
  require_workspace(launch.who, Gemm::get_workspace_size(args), launch.workspace_size);
  Gemm gemm;
  check_cutlass(gemm.initialize(args, launch.workspace, launch.stream), Status::internal,
                launch.who, "initialize", m, n, k);
  check_cutlass(gemm.run(launch.stream), Status::cuda_error, launch.who, "run (kernel launch)", m,
                n, k);
}

template <int kTileM, int kTileN>
std::size_t dense_kernel_workspace_size(int m, int n, int k, int sm_count) {
  using Gemm = typename DenseKernel<kTileM, kTileN>::Gemm;
  DenseLaunch shape{};
  shape.m = m;
  shape.n = n;
  shape.k = k;
  shape.device.sm_count = sm_count;
  return Gemm::get_workspace_size(dense_arguments<Gemm>(shape));
}

}  // namespace metrale::reference::cutlass::detail

// One tile per line: the explicit instantiations of run_dense / dense_workspace_size.
#define METRALE_CUTLASS_DENSE_TILE(TILE, TM, TN)                                    \
  namespace metrale::reference::cutlass::detail {                                   \
  static_assert(tile_info(Tile::TILE).m == TM && tile_info(Tile::TILE).n == TN,     \
                "the tile table and the instantiation disagree");                   \
  template <>                                                                       \
  void run_dense<Tile::TILE>(const DenseLaunch& launch) {                           \
    run_dense_kernel<TM, TN>(launch);                                               \
  }                                                                                 \
  template <>                                                                       \
  std::size_t dense_workspace_size<Tile::TILE>(int m, int n, int k, int sm_count) { \
    return dense_kernel_workspace_size<TM, TN>(m, n, k, sm_count);                  \
  }                                                                                 \
  }
