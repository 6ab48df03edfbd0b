// The entry of the Blackwell block-scaled NVFP4 GEMM of the CUTLASS reference arm
// (nvfp4_w4a4_gemm_sm100, W4A4: see cutlass_backend.hpp). This file is in every CUTLASS build and
// holds no kernel: it refuses a build without METRALE_CUTLASS_SM100, then any device that cannot
// run sm_100a code, then the shapes and pointers the kernel cannot take, and only then calls
// sm100/w4a4_gemm.cu. Nothing on the H200 (sm_90) reaches the kernel: it is compiled, never run
// here. Host code.
#include <cuda_runtime.h>

#include <cstdint>

#include "reference/cutlass/common.cuh"
#include "reference/cutlass/sm100/w4a4_gemm.hpp"

namespace metrale::reference::cutlass {
namespace {

constexpr const char* kWho = "nvfp4_w4a4_gemm_sm100";

#if defined(METRALE_CUTLASS_SM100)
// sm_100a code (the "a" arch-specific target that tcgen05's block-scaled MMA needs) runs only on
// compute capability 10.0: not on sm_103 (that needs sm_103a), sm_120, or any Hopper part.
detail::DeviceInfo require_sm100() {
  detail::DeviceInfo info;
  METRALE_CUDA_CHECK(cudaGetDevice(&info.device));
  cudaDeviceProp prop{};
  METRALE_CUDA_CHECK(cudaGetDeviceProperties(&prop, info.device));
  if (prop.major != 10 || prop.minor != 0) {
    fail_message(Status::unsupported,
                 concat(kWho,
                        " (CUTLASS): the Blackwell block-scaled NVFP4 GEMM needs an sm_100a "
                        "device; this is ",
                        prop.name, " (sm_", prop.major, prop.minor, ")"));
  }
  info.sm_count = prop.multiProcessorCount;
  return info;
}

// K % 32: the packed FP4 rows of act and weight are TMA rows of 16 bytes (32 elements);
// N % 8: the bf16 output rows are TMA rows of 16 bytes.
void require_shape(const Nvfp4Gemm& args) {
  if (args.k % 32 != 0) {
    fail_message(Status::unsupported,
                 concat(kWho, " (CUTLASS): K = ", args.k,
                        " is not a multiple of 32: the packed FP4 rows need 16 bytes (K % 32 == 0)"));
  }
  if (args.n % 8 != 0) {
    fail_message(Status::unsupported,
                 concat(kWho, " (CUTLASS): N = ", args.n,
                        " is not a multiple of 8: the bf16 output rows need 16 bytes (N % 8 == 0)"));
  }
}
#endif

}  // namespace

void nvfp4_w4a4_gemm_sm100(const Nvfp4Gemm& args, core::Buffer ws, void* stream) {
#if defined(METRALE_CUTLASS_SM100)
  const detail::DeviceInfo device = require_sm100();
  if (args.m == 0) return;
  require_shape(args);
  detail::require_aligned(kWho, "act", args.act, 16);
  detail::require_aligned(kWho, "weight_packed", args.packed, 16);
  detail::require_aligned(kWho, "weight_scale", args.scale, 16);
  detail::require_aligned(kWho, "out", args.out, 16);
  detail::run_w4a4_sm100(args, ws, stream, device.device, device.sm_count, kWho);
#else
  (void)args;
  (void)ws;
  (void)stream;
  fail_message(Status::unsupported,
               concat(kWho,
                      " (CUTLASS): the Blackwell block-scaled NVFP4 GEMM was not built (configure "
                      "with -DMETRALE_CUTLASS_SM100=ON to compile it for sm_100a)"));
#endif
}

std::size_t nvfp4_w4a4_gemm_sm100_workspace_size(int m, int n, int k) {
#if defined(METRALE_CUTLASS_SM100)
  if (m <= 0 || n <= 0 || k <= 0) return 0;
  return detail::w4a4_sm100_workspace_size(m, n, k, detail::current_sm_count());
#else
  (void)m;
  (void)n;
  (void)k;
  return 0;
#endif
}

}  // namespace metrale::reference::cutlass
