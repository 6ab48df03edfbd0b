#include "cuda/sm90/tensor_map.hpp"

#include <cudaTypedefs.h>
#include <cuda_runtime.h>

#include "core/error.hpp"

namespace metrale::cuda::sm90 {
namespace {

using EncodeTiled = PFN_cuTensorMapEncodeTiled_v12000;

// The driver's encoder, looked up once (thread-safe static); null when the driver lacks it.
EncodeTiled encode_tiled() {
  static const EncodeTiled encoder = [] {
    void* fn = nullptr;
    cudaDriverEntryPointQueryResult found{};
    const cudaError_t err = cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &fn, 12000,
                                                             cudaEnableDefault, &found);
    return err == cudaSuccess && found == cudaDriverEntryPointSuccess
               ? reinterpret_cast<EncodeTiled>(fn)
               : nullptr;
  }();
  return encoder;
}

}  // namespace

CUtensorMap bf16_rows_sw128(const void* base, std::uint64_t rows, std::uint64_t cols,
                            std::uint64_t row_stride, std::uint32_t box_rows) {
  const EncodeTiled encode = encode_tiled();
  if (encode == nullptr)
    fail(Status::cuda_error, "the CUDA driver provides no cuTensorMapEncodeTiled (CUDA 12.0+ needed)");
  constexpr std::uint32_t kBoxCols = 64;  // 128 bytes: the widest box the 128-byte swizzle takes
  const cuuint64_t dims[2] = {cols, rows};
  const cuuint64_t strides[1] = {row_stride * sizeof(std::uint16_t)};
  const cuuint32_t box[2] = {kBoxCols, box_rows};
  const cuuint32_t element_strides[2] = {1, 1};
  CUtensorMap map{};
  const CUresult result =
      encode(&map, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 2, const_cast<void*>(base), dims, strides, box,
             element_strides, CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
             CU_TENSOR_MAP_L2_PROMOTION_L2_128B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (result != CUDA_SUCCESS)
    fail(Status::cuda_error,
         "cuTensorMapEncodeTiled failed ({}) for a bf16 matrix of {} x {} (row stride {}), box {} x {}",
         static_cast<int>(result), rows, cols, row_stride, box_rows, kBoxCols);
  return map;
}

}  // namespace metrale::cuda::sm90
