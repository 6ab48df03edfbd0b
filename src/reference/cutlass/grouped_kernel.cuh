// CUTLASS's Hopper (sm_90a) grouped bf16 GEMM (GemmUniversalMode::kGrouped, ptr-array TMA
// warp-specialized kernels) as the reference arm runs it for the NVFP4 MoE operations and the
// bench's bf16-grouped opponent runs it on bf16 weights (alpha_g = 1):
//   for each group g:  D_g[M_g, N] = alpha_g · A_g[M_g, K] · B_g[N, K]ᵀ
//   A_g  the expert's rows of the (gathered) bf16 activations, row-major
//   B_g  the expert's weight dequantized to bf16 [N, K] (CUTLASS's column-major K×N operand)
//   D_g  the expert's rows of the bf16 output, row-major; alpha_g = that projection's scale_2
// The per-group alpha is CUTLASS 4.2's per-group alpha pointer array of the ptr-array
// LinearCombination epilogue (alpha_ptr_array: group g reads *alpha_ptr_array[g]). There is no
// C operand (ElementC = void). Each kernel fetches its group's problem size, pointers and strides
// from device arrays and builds its TMA descriptors on the device; we stage those arrays.
// Included only by the grouped_tiles*.cu files, which instantiate each tile once.
#pragma once

#include <cstring>
#include <type_traits>
#include <vector>

#include <cute/tensor.hpp>
#include <cutlass/epilogue/collective/collective_builder.hpp>
#include <cutlass/gemm/collective/collective_builder.hpp>
#include <cutlass/gemm/device/gemm_universal_adapter.h>
#include <cutlass/gemm/dispatch_policy.hpp>
#include <cutlass/gemm/group_array_problem_shape.hpp>
#include <cutlass/gemm/kernel/gemm_universal.hpp>
#include <cutlass/util/packed_stride.hpp>

#include "reference/cutlass/grouped_plan.hpp"
#include "reference/cutlass/staging.cuh"

namespace metrale::reference::cutlass::detail {

template <GroupedTile kTile>
struct GroupedKernel {
  static constexpr GroupedTileInfo kInfo = grouped_tile_info(kTile);
  static constexpr int kAlignment = 8;  // bf16 elements per 16 bytes (TMA)
  static constexpr bool kCooperative = kInfo.m >= 128;
  static_assert(kInfo.m % 64 == 0 && kInfo.n % 64 == 0 && kInfo.k % 64 == 0,
                "a wgmma tile is a multiple of 64 in M, N and K");
  static_assert(kInfo.cluster_m == 1 || kInfo.cluster_m == 2,
                "the weight tile is multicast to at most two CTAs along M");
  using TileShape = cute::Shape<cute::Int<kInfo.m>, cute::Int<kInfo.n>, cute::Int<kInfo.k>>;
  using ClusterShape = cute::Shape<cute::Int<kInfo.cluster_m>, cute::_1, cute::_1>;
  using MainloopSchedule =
      cute::conditional_t<kCooperative,
                          ::cutlass::gemm::KernelPtrArrayTmaWarpSpecializedCooperative,
                          ::cutlass::gemm::KernelPtrArrayTmaWarpSpecializedPingpong>;
  using EpilogueSchedule =
      cute::conditional_t<kCooperative, ::cutlass::epilogue::PtrArrayTmaWarpSpecializedCooperative,
                          ::cutlass::epilogue::PtrArrayTmaWarpSpecializedPingpong>;
  using ProblemShape = ::cutlass::gemm::GroupProblemShape<cute::Shape<int, int, int>>;

  // Layout tags as pointers: one stride per group (the ptr-array form).
  using Epilogue = typename ::cutlass::epilogue::collective::CollectiveBuilder<
      ::cutlass::arch::Sm90, ::cutlass::arch::OpClassTensorOp, TileShape, ClusterShape,
      ::cutlass::epilogue::collective::EpilogueTileAuto, float, float, void,
      ::cutlass::layout::RowMajor*, kAlignment, ::cutlass::bfloat16_t, ::cutlass::layout::RowMajor*,
      kAlignment, EpilogueSchedule>::CollectiveOp;

  using Mainloop = typename ::cutlass::gemm::collective::CollectiveBuilder<
      ::cutlass::arch::Sm90, ::cutlass::arch::OpClassTensorOp, ::cutlass::bfloat16_t,
      ::cutlass::layout::RowMajor*, kAlignment, ::cutlass::bfloat16_t,
      ::cutlass::layout::ColumnMajor*, kAlignment, float, TileShape, ClusterShape,
      ::cutlass::gemm::collective::StageCountAutoCarveout<static_cast<int>(
          sizeof(typename Epilogue::SharedStorage))>,
      MainloopSchedule>::CollectiveOp;

  using Kernel = ::cutlass::gemm::kernel::GemmUniversal<ProblemShape, Mainloop, Epilogue>;
  using Gemm = ::cutlass::gemm::device::GemmUniversalAdapter<Kernel>;
  using Shape = typename ProblemShape::UnderlyingProblemShape;
  using StrideA = typename Kernel::InternalStrideA;
  using StrideB = typename Kernel::InternalStrideB;
  using StrideD = typename Kernel::InternalStrideD;
  static_assert(std::is_trivially_copyable_v<Shape> && std::is_trivially_copyable_v<StrideA> &&
                    std::is_trivially_copyable_v<StrideB> && std::is_trivially_copyable_v<StrideD>,
                "the per-group arrays are staged as raw bytes");
};

// Byte offsets of the per-group arrays inside one staged block (host copy and device copy alike),
// each array on a 16-byte boundary.
template <class K>
struct StagedArrays {
  std::size_t jobs, shapes, ptr_a, ptr_b, ptr_d, stride_a, stride_b, stride_d, alpha, alpha_ptr;
  std::size_t total = 0;

  explicit StagedArrays(int groups) {
    const auto g = static_cast<std::size_t>(groups);
    jobs = put(g * sizeof(DequantJob));
    shapes = put(g * sizeof(typename K::Shape));
    ptr_a = put(g * sizeof(void*));
    ptr_b = put(g * sizeof(void*));
    ptr_d = put(g * sizeof(void*));
    stride_a = put(g * sizeof(typename K::StrideA));
    stride_b = put(g * sizeof(typename K::StrideB));
    stride_d = put(g * sizeof(typename K::StrideD));
    alpha = put(g * sizeof(float));
    alpha_ptr = put(g * sizeof(float*));
  }

 private:
  std::size_t put(std::size_t bytes) {
    const std::size_t at = total;
    total = (total + bytes + 15) / 16 * 16;
    return at;
  }
};

template <class K>
typename K::Gemm::Arguments grouped_arguments(const GroupedCall& call, char* device_block,
                                              const StagedArrays<K>& at,
                                              const typename K::Shape* host_shapes) {
  using Gemm = typename K::Gemm;
  ::cutlass::KernelHardwareInfo hw_info;
  hw_info.device_id = call.device.device;
  hw_info.sm_count = call.device.sm_count;
  auto in = [device_block](std::size_t offset) { return device_block + offset; };

  typename Gemm::Arguments args{
      ::cutlass::gemm::GemmUniversalMode::kGrouped,
      {call.groups, reinterpret_cast<typename K::Shape*>(in(at.shapes)), host_shapes},
      {reinterpret_cast<const ::cutlass::bfloat16_t**>(in(at.ptr_a)),
       reinterpret_cast<typename K::StrideA*>(in(at.stride_a)),
       reinterpret_cast<const ::cutlass::bfloat16_t**>(in(at.ptr_b)),
       reinterpret_cast<typename K::StrideB*>(in(at.stride_b))},
      {{},
       nullptr,
       reinterpret_cast<typename K::StrideD*>(in(at.stride_d)),
       reinterpret_cast<::cutlass::bfloat16_t**>(in(at.ptr_d)),
       reinterpret_cast<typename K::StrideD*>(in(at.stride_d))},
      hw_info};
  auto& fusion = args.epilogue.thread;
  fusion.alpha = 1.0f;
  fusion.beta = 0.0f;
  fusion.alpha_ptr = nullptr;
  fusion.beta_ptr = nullptr;
  fusion.alpha_ptr_array = reinterpret_cast<const float* const*>(in(at.alpha_ptr));
  fusion.beta_ptr_array = nullptr;
  fusion.dAlpha = {cute::_0{}, cute::_0{}, 1};  // one alpha per group (L = group index)
  return args;
}

// The host copy of the group sizes (CUTLASS's can_implement and its grid size read it).
template <class K>
std::vector<typename K::Shape> host_shapes_of(const GroupedCall& call) {
  std::vector<typename K::Shape> shapes(call.groups);
  for (int g = 0; g < call.groups; ++g) {
    shapes[g] = typename K::Shape{call.entries[g].rows, call.n, call.k};
  }
  return shapes;
}

// Writes the per-group arrays for the device block at `device_block`: pointers stored in it (the
// alpha pointers) are device addresses inside that block.
template <class K>
void fill_staged(const GroupedCall& call, const StagedArrays<K>& at, char* host, char* device_block,
                 const std::vector<typename K::Shape>& host_shapes) {
  const int n = call.n, k = call.k;
  for (int g = 0; g < call.groups; ++g) {
    const GroupEntry& e = call.entries[g];
    const typename K::StrideA sa =
        ::cutlass::make_cute_packed_stride(typename K::StrideA{}, {e.rows, k, 1});
    const typename K::StrideB sb =
        ::cutlass::make_cute_packed_stride(typename K::StrideB{}, {n, k, 1});
    const typename K::StrideD sd =
        ::cutlass::make_cute_packed_stride(typename K::StrideD{}, {e.rows, n, 1});
    const float* alpha_device = reinterpret_cast<const float*>(device_block + at.alpha) + g;
    std::memcpy(host + at.jobs + g * sizeof(DequantJob), &e.job, sizeof(DequantJob));
    std::memcpy(host + at.shapes + g * sizeof(typename K::Shape), &host_shapes[g],
                sizeof(typename K::Shape));
    std::memcpy(host + at.ptr_a + g * sizeof(void*), &e.a, sizeof(void*));
    std::memcpy(host + at.ptr_b + g * sizeof(void*), &e.job.out, sizeof(void*));
    std::memcpy(host + at.ptr_d + g * sizeof(void*), &e.d, sizeof(void*));
    std::memcpy(host + at.stride_a + g * sizeof(sa), &sa, sizeof(sa));
    std::memcpy(host + at.stride_b + g * sizeof(sb), &sb, sizeof(sb));
    std::memcpy(host + at.stride_d + g * sizeof(sd), &sd, sizeof(sd));
    std::memcpy(host + at.alpha + g * sizeof(float), &e.alpha, sizeof(float));
    std::memcpy(host + at.alpha_ptr + g * sizeof(float*), &alpha_device, sizeof(float*));
  }
}

template <GroupedTile kTile>
std::size_t grouped_extra_bytes(int groups, int sm_count) {
  using K = GroupedKernel<kTile>;
  const StagedArrays<K> at(groups);
  GroupedCall shape{};
  shape.groups = groups;
  shape.device.sm_count = sm_count;
  const std::size_t cutlass_bytes =
      K::Gemm::get_workspace_size(grouped_arguments<K>(shape, nullptr, at, nullptr));
  return align_up(at.total) + align_up(cutlass_bytes);
}

// Checks that CUTLASS can run the call, then writes the per-group arrays into a pinned staging
// buffer and uploads them on call.stream into the region taken from `carver`; CUTLASS's workspace
// is the region after it.
template <GroupedTile kTile>
StagedRegions stage_grouped(const GroupedCall& call, Carver& carver) {
  using K = GroupedKernel<kTile>;
  using Gemm = typename K::Gemm;
  const StagedArrays<K> at(call.groups);
  StagedRegions regions;
  regions.arrays = static_cast<char*>(carver.take(at.total));
  regions.cutlass_workspace = carver.next();
  const std::vector<typename K::Shape> host_shapes = host_shapes_of<K>(call);

  StagingLease lease = acquire_staging(at.total);
  fill_staged<K>(call, at, static_cast<char*>(lease.host()), regions.arrays, host_shapes);
  const typename Gemm::Arguments args =
      grouped_arguments<K>(call, regions.arrays, at, host_shapes.data());
  // can_implement reads the host copy of the shapes: check before anything is enqueued.
  check_cutlass(Gemm::can_implement(args), Status::unsupported, call.who, "can_implement",
                call.rows_used, call.n, call.k);
  require_workspace(call.who, carver.used() + Gemm::get_workspace_size(args), carver.capacity());
  lease.upload(regions.arrays, at.total, call.stream);
  return regions;
}

template <GroupedTile kTile>
void launch_staged(const GroupedCall& call, const StagedRegions& regions, cudaStream_t stream) {
  using K = GroupedKernel<kTile>;
  using Gemm = typename K::Gemm;
  const StagedArrays<K> at(call.groups);
  const std::vector<typename K::Shape> host_shapes = host_shapes_of<K>(call);
  const typename Gemm::Arguments args =
      grouped_arguments<K>(call, regions.arrays, at, host_shapes.data());
  Gemm gemm;
  check_cutlass(gemm.initialize(args, regions.cutlass_workspace, stream), Status::internal,
                call.who, "initialize", call.rows_used, call.n, call.k);
  check_cutlass(gemm.run(stream), Status::cuda_error, call.who, "run (kernel launch)",
                call.rows_used, call.n, call.k);
}

// Stage and upload the arrays, gather the A rows, dequantize the weights, run the grouped GEMM:
// all on the caller's stream, in that order.
template <GroupedTile kTile>
void run_grouped(const GroupedCall& call, Carver& carver) {
  const StagedRegions regions = stage_grouped<kTile>(call, carver);
  if (call.token_ids != nullptr) {
    launch_gather_rows(call.a, call.a_rows, call.token_ids, call.first_row, call.rows_used, call.k,
                       call.gathered, call.stream);
  }
  const StagedArrays<GroupedKernel<kTile>> at(call.groups);
  launch_dequantize(reinterpret_cast<const DequantJob*>(regions.arrays + at.jobs), call.groups,
                    DequantJob{}, call.n, call.k, call.layout, call.stream);
  launch_staged<kTile>(call, regions, call.stream);
}

}  // namespace metrale::reference::cutlass::detail
