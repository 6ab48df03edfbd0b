#include "cuda/sm90/tiled/tma_maps.hpp"

#include <cudaTypedefs.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "cuda/sm90/tiled/tiled_params.hpp"

namespace metrale::cuda::sm90 {
namespace {

using Encode = PFN_cuTensorMapEncodeTiled_v12000;

// The driver's encoder, looked up once (null when the driver has none).
Encode encoder() {
  static const Encode encode = [] {
    void* fn = nullptr;
    cudaDriverEntryPointQueryResult found{};
    if (cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &fn, 12000, cudaEnableDefault,
                                         &found) != cudaSuccess ||
        found != cudaDriverEntryPointSuccess) {
      (void)cudaGetLastError();
      return Encode{nullptr};
    }
    return reinterpret_cast<Encode>(fn);
  }();
  return encode;
}

}  // namespace

bool encode_bf16_map(CUtensorMap& map, const void* data, long rows, int k, int box_rows) {
  constexpr int kBf16Bytes = 2;
  const long pitch = static_cast<long>(k) * kBf16Bytes;
  if (rows <= 0 || k <= 0 || reinterpret_cast<std::uintptr_t>(data) % 16 != 0 || pitch % 16 != 0)
    return false;
  const Encode encode = encoder();
  if (encode == nullptr) return false;
  const cuuint64_t dims[2] = {static_cast<cuuint64_t>(k), static_cast<cuuint64_t>(rows)};
  const cuuint64_t pitches[1] = {static_cast<cuuint64_t>(pitch)};
  const cuuint32_t box[2] = {kBlockK, static_cast<cuuint32_t>(box_rows)};
  const cuuint32_t element_strides[2] = {1, 1};
  return encode(&map, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 2, const_cast<void*>(data), dims, pitches,
                box, element_strides, CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
                CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) == CUDA_SUCCESS;
}

}  // namespace metrale::cuda::sm90
