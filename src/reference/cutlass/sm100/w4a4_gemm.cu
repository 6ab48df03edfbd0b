// The Blackwell block-scaled NVFP4 GEMM of the CUTLASS reference arm, W4A4:
//   out[M,N] = alpha · q(act)[M,K] · W[N,K]ᵀ,   alpha = scale_2_act · scale_2 (fp32, on device)
// tcgen05's block-scaled MMA takes FP4 on both operands, so the bf16 activation is first quantized
// by our recipe (format/nvfp4_recipe.hpp, the block step of cuda/pack/quantize_block.hpp):
//   1. amax of |act| (NaN ignored) by atomicMax on the fp32 bits, into the workspace;
//   2. one thread per 16-element block: scale_2_act = amax / 2688, the e4m3 block scale and the
//      packed codes [M, K/2] (even k in the low nibble), the scale written at the SFB swizzle
//      offset of (row m, block b): CUTLASS's SFA layout is the same 128x4 atom over the rows of A;
//      thread 0 also writes alpha;
//   3. the weight's scales are used in place when already SFB, else swizzled into the workspace;
//   4. CUTLASS 4.x sm100 GEMM from the collective builders (OpClassBlockScaledTensorOp,
//      nv_float4_t<float_e2m1_t> A row-major and B column-major K x N, i.e. W [N,K] "TN"), 1-SM
//      128x128x256 MMA tile, cluster 1x1x1, fp32 accumulation, D bf16 row-major, no C, alpha read
//      from device memory (no host synchronisation anywhere).
// The padding of SFA/SFB (rows to 128, scale columns to 4) is zeroed: a garbage e4m3 byte in a
// padded K column would multiply the zero-filled FP4 padding into NaN.
// Arch: built with -gencode for sm_100a (beside the target's sm_90a, where the CUTLASS kernel is an
// empty arch-guarded body); runs only on compute capability 10.0. Nothing in this repository can
// run it on the H200; it is compiled here, and its first run will be on a B200-class GPU.
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include <cute/tensor.hpp>
#include <cutlass/detail/sm100_blockscaled_layout.hpp>
#include <cutlass/epilogue/collective/collective_builder.hpp>
#include <cutlass/gemm/collective/collective_builder.hpp>
#include <cutlass/gemm/device/gemm_universal_adapter.h>
#include <cutlass/gemm/dispatch_policy.hpp>
#include <cutlass/gemm/kernel/gemm_universal.hpp>
#include <cutlass/util/packed_stride.hpp>

#include "cuda/pack/quantize_block.hpp"
#include "format/layouts.hpp"
#include "format/nvfp4_recipe.hpp"
#include "reference/cutlass/common.cuh"
#include "reference/cutlass/sm100/w4a4_gemm.hpp"

#if !defined(CUTLASS_ARCH_MMA_SM100_SUPPORTED)
#error "the sm100 block-scaled GEMM needs CUTLASS >= 3.8 and nvcc >= 12.8"
#endif

namespace metrale::reference::cutlass::detail {
namespace {

// ---- the CUTLASS kernel ------------------------------------------------------------------------

struct W4a4Kernel {
  using ElementAB = ::cutlass::nv_float4_t<::cutlass::float_e2m1_t>;
  using ElementData = typename ElementAB::DataType;        // float_e2m1_t
  using ElementScale = typename ElementAB::ScaleFactorType;  // float_ue4m3_t
  static constexpr int kAlignmentAB = 32;  // 16 bytes of FP4
  static constexpr int kAlignmentD = 8;    // 16 bytes of bf16
  using MmaTileShape = cute::Shape<cute::_128, cute::_128, cute::_256>;
  using ClusterShape = cute::Shape<cute::_1, cute::_1, cute::_1>;

  using Epilogue = typename ::cutlass::epilogue::collective::CollectiveBuilder<
      ::cutlass::arch::Sm100, ::cutlass::arch::OpClassBlockScaledTensorOp, MmaTileShape,
      ClusterShape, ::cutlass::epilogue::collective::EpilogueTileAuto, float, float, void,
      ::cutlass::layout::RowMajor, kAlignmentD, ::cutlass::bfloat16_t,
      ::cutlass::layout::RowMajor, kAlignmentD,
      ::cutlass::epilogue::collective::EpilogueScheduleAuto>::CollectiveOp;

  using Mainloop = typename ::cutlass::gemm::collective::CollectiveBuilder<
      ::cutlass::arch::Sm100, ::cutlass::arch::OpClassBlockScaledTensorOp, ElementAB,
      ::cutlass::layout::RowMajor, kAlignmentAB, ElementAB, ::cutlass::layout::ColumnMajor,
      kAlignmentAB, float, MmaTileShape, ClusterShape,
      ::cutlass::gemm::collective::StageCountAutoCarveout<static_cast<int>(
          sizeof(typename Epilogue::SharedStorage))>,
      ::cutlass::gemm::collective::KernelScheduleAuto>::CollectiveOp;

  using Kernel = ::cutlass::gemm::kernel::GemmUniversal<cute::Shape<int, int, int, int>, Mainloop,
                                                        Epilogue, void>;
  using Gemm = ::cutlass::gemm::device::GemmUniversalAdapter<Kernel>;
  using ScaleConfig = typename Mainloop::Sm1xxBlkScaledConfig;
};

using Gemm = W4a4Kernel::Gemm;

struct W4a4Launch {
  const void* a_packed;  // [M, K/2]
  const void* sfa;       // SFB swizzle over M rows
  const void* b_packed;  // [N, K/2]
  const void* sfb;
  const float* alpha;    // device
  void* d;               // [M, N] bf16
  int m, n, k;
  int device, sm_count;
};

Gemm::Arguments w4a4_arguments(const W4a4Launch& launch) {
  using Kernel = Gemm::GemmKernel;
  using Config = W4a4Kernel::ScaleConfig;
  const int m = launch.m, n = launch.n, k = launch.k;
  const auto stride_a = ::cutlass::make_cute_packed_stride(typename Kernel::StrideA{}, {m, k, 1});
  const auto stride_b = ::cutlass::make_cute_packed_stride(typename Kernel::StrideB{}, {n, k, 1});
  const auto stride_c = ::cutlass::make_cute_packed_stride(typename Kernel::StrideC{}, {m, n, 1});
  const auto stride_d = ::cutlass::make_cute_packed_stride(typename Kernel::StrideD{}, {m, n, 1});
  const auto problem = cute::make_shape(m, n, k, 1);
  ::cutlass::KernelHardwareInfo hw_info;
  hw_info.device_id = launch.device;
  hw_info.sm_count = launch.sm_count;

  using Data = W4a4Kernel::ElementData;
  using Scale = W4a4Kernel::ElementScale;
  Gemm::Arguments args{
      ::cutlass::gemm::GemmUniversalMode::kGemm,
      {m, n, k, 1},
      {static_cast<const Data*>(launch.a_packed), stride_a,
       static_cast<const Data*>(launch.b_packed), stride_b,
       static_cast<const Scale*>(launch.sfa), Config::tile_atom_to_shape_SFA(problem),
       static_cast<const Scale*>(launch.sfb), Config::tile_atom_to_shape_SFB(problem)},
      {{}, nullptr, stride_c, static_cast<::cutlass::bfloat16_t*>(launch.d), stride_d},
      hw_info};
  args.epilogue.thread.alpha_ptr = launch.alpha;
  args.epilogue.thread.beta = 0.0f;
  return args;
}

// ---- activation quantization and scale swizzle -------------------------------------------------

constexpr int kThreads = 256;

// |x| of a bf16 as the fp32 bits of |x|, 0 for NaN: non-negative floats order like their bits.
__device__ __forceinline__ std::uint32_t abs_bits(std::uint32_t bf16) {
  const std::uint32_t magnitude = bf16 & 0x7FFFu;
  return magnitude > 0x7F80u ? 0u : magnitude << 16;
}

// amax over `vectors` 16-byte vectors (8 bf16 each) of act, into *amax_bits (zeroed before).
__global__ void act_amax_kernel(const uint4* act, std::size_t vectors, std::uint32_t* amax_bits) {
  std::uint32_t running = 0;
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x;
       i < vectors; i += stride) {
    const uint4 v = act[i];
    const std::uint32_t words[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
    for (int w = 0; w < 4; ++w) {
      running = max(running, max(abs_bits(words[w] & 0xFFFFu), abs_bits(words[w] >> 16)));
    }
  }
  running = __reduce_max_sync(0xFFFFFFFFu, running);
  if ((threadIdx.x & 31) == 0 && running != 0) atomicMax(amax_bits, running);
}

// One thread per 16-element block of act: codes, e4m3 scale at its SFA offset; thread 0 alpha.
__global__ void act_quantize_kernel(const uint4* act, int m, int k,
                                    const std::uint32_t* amax_bits, float weight_scale_2,
                                    uint2* packed, std::uint8_t* sfa, float* alpha) {
  const float scale_2 = format::scale_2_from_amax(format::bits_to_float(*amax_bits));
  const std::size_t blocks_per_row = static_cast<std::size_t>(k) / format::kBlockSize;
  const std::size_t blocks = blocks_per_row * m;
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  const std::size_t first = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x;
  if (first == 0) *alpha = scale_2 * weight_scale_2;
  for (std::size_t i = first; i < blocks; i += stride) {
    const uint4 lo = act[2 * i];
    const uint4 hi = act[2 * i + 1];
    const std::uint32_t words[8] = {lo.x, lo.y, lo.z, lo.w, hi.x, hi.y, hi.z, hi.w};
    const cuda::pack::PackedBlock block = cuda::pack::quantize_block(words, scale_2);
    packed[i] = make_uint2(block.bytes[0], block.bytes[1]);
    const std::size_t row = i / blocks_per_row;
    const std::size_t col = i % blocks_per_row;
    sfa[format::sfb_offset(row, col, static_cast<std::size_t>(k))] = block.scale;
  }
}

// [K/16, N] weight scales into the SFB layout (whose padding was zeroed before).
__global__ void swizzle_k16_by_n_kernel(const std::uint8_t* in, int n, int k, std::uint8_t* sfb) {
  const std::size_t total = static_cast<std::size_t>(n) * (k / format::kBlockSize);
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < total;
       i += stride) {
    const std::size_t b = i / n, row = i % n;  // i = b·N + row: coalesced reads
    sfb[format::sfb_offset(row, b, static_cast<std::size_t>(k))] = in[i];
  }
}

unsigned grid_for(std::size_t items, int sm_count) {
  const std::size_t wanted = (items + kThreads - 1) / kThreads;
  const std::size_t cap = static_cast<std::size_t>(sm_count > 0 ? sm_count : 1) * 8;
  const std::size_t grid = wanted < cap ? wanted : cap;
  return static_cast<unsigned>(grid > 0 ? grid : 1);
}

// ---- workspace ---------------------------------------------------------------------------------

// The regions, in carving order: amax + alpha, packed act, SFA, swizzled weight scales.
struct Regions {
  std::size_t scalars = 2 * sizeof(std::uint32_t);
  std::size_t act_packed, sfa, sfb;
  Regions(int m, int n, int k)
      : act_packed(static_cast<std::size_t>(m) * (k / 2)),
        sfa(format::sfb_bytes(m, k)),
        sfb(format::sfb_bytes(n, k)) {}
  std::size_t total() const {
    return align_up(scalars) + align_up(act_packed) + align_up(sfa) + align_up(sfb);
  }
};

std::size_t cutlass_workspace_size(int m, int n, int k, int sm_count) {
  W4a4Launch shape{};
  shape.m = m;
  shape.n = n;
  shape.k = k;
  shape.sm_count = sm_count;
  return Gemm::get_workspace_size(w4a4_arguments(shape));
}

}  // namespace

std::size_t w4a4_sm100_workspace_size(int m, int n, int k, int sm_count) {
  return kWorkspaceAlign + Regions(m, n, k).total() +
         align_up(cutlass_workspace_size(m, n, k, sm_count));
}

void run_w4a4_sm100(const Nvfp4Gemm& args, core::Buffer ws, void* stream, int device,
                    int sm_count, const char* who) {
  const int m = args.m, n = args.n, k = args.k;
  const auto cu_stream = static_cast<cudaStream_t>(stream);
  const Regions sizes(m, n, k);
  Carver carver(ws.ptr, ws.size);
  auto* scalars = static_cast<std::uint32_t*>(carver.take(sizes.scalars));
  auto* act_packed = static_cast<uint2*>(carver.take(sizes.act_packed));
  auto* sfa = static_cast<std::uint8_t*>(carver.take(sizes.sfa));
  auto* sfb_copy = static_cast<std::uint8_t*>(carver.take(sizes.sfb));
  auto* alpha = reinterpret_cast<float*>(scalars + 1);

  W4a4Launch launch{act_packed, sfa, args.packed, args.scale, alpha, args.out,
                    m,          n,   k,           device,     sm_count};
  Gemm::Arguments gemm_args = w4a4_arguments(launch);
  check_cutlass(Gemm::can_implement(gemm_args), Status::unsupported, who, "can_implement", m, n, k);
  require_workspace(who, carver.used() + Gemm::get_workspace_size(gemm_args), ws.size);

  // 1-2: the activation to NVFP4 (SFA padding zeroed first), alpha on device.
  METRALE_CUDA_CHECK(cudaMemsetAsync(scalars, 0, sizeof(std::uint32_t), cu_stream));
  METRALE_CUDA_CHECK(cudaMemsetAsync(sfa, 0, sizes.sfa, cu_stream));
  const std::size_t vectors = static_cast<std::size_t>(m) * k / 8;
  act_amax_kernel<<<grid_for(vectors, sm_count), kThreads, 0, cu_stream>>>(
      reinterpret_cast<const uint4*>(args.act), vectors, scalars);
  METRALE_CUDA_CHECK_LAUNCH(act_amax_kernel);
  act_quantize_kernel<<<grid_for(vectors / 2, sm_count), kThreads, 0, cu_stream>>>(
      reinterpret_cast<const uint4*>(args.act), m, k, scalars, args.scale_2, act_packed, sfa,
      alpha);
  METRALE_CUDA_CHECK_LAUNCH(act_quantize_kernel);

  // 3: the weight's scales in SFB.
  if (args.scale_layout == ScaleLayout::k16_by_n) {
    METRALE_CUDA_CHECK(cudaMemsetAsync(sfb_copy, 0, sizes.sfb, cu_stream));
    const std::size_t scales = static_cast<std::size_t>(n) * (k / format::kBlockSize);
    swizzle_k16_by_n_kernel<<<grid_for(scales, sm_count), kThreads, 0, cu_stream>>>(
        args.scale, n, k, sfb_copy);
    METRALE_CUDA_CHECK_LAUNCH(swizzle_k16_by_n_kernel);
    launch.sfb = sfb_copy;
    gemm_args = w4a4_arguments(launch);
  }

  // 4: the GEMM.
  Gemm gemm;
  check_cutlass(gemm.initialize(gemm_args, carver.next(), cu_stream), Status::internal, who,
                "initialize", m, n, k);
  check_cutlass(gemm.run(cu_stream), Status::cuda_error, who, "run (kernel launch)", m, n, k);
}

}  // namespace metrale::reference::cutlass::detail
