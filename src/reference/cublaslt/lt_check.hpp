// Status checks for cuBLAS and cuBLASLt calls in the cuBLASLt reference arm (and the bench's
// cuBLAS opponents): a failed call becomes metrale::Error naming the call, the device and the
// status. CUBLAS_STATUS_NOT_SUPPORTED maps to Status::unsupported (the library declined the
// problem); every other failure to Status::cuda_error.
#pragma once

#include <cublasLt.h>
#include <cuda_runtime.h>

#include "core/error.hpp"

namespace metrale::reference::cublaslt {

[[noreturn]] inline void throw_cublas_error(cublasStatus_t status, const char* call,
                                            const char* file, int line) {
  int device = -1;
  cudaGetDevice(&device);
  const Status kind =
      status == CUBLAS_STATUS_NOT_SUPPORTED ? Status::unsupported : Status::cuda_error;
  fail(kind, "{} failed on device {}: {} ({}) at {}:{}", call, device,
       cublasLtGetStatusName(status), cublasLtGetStatusString(status), file, line);
}

}  // namespace metrale::reference::cublaslt

#define METRALE_CUBLAS_CHECK(call)                                                         \
  do {                                                                                     \
    cublasStatus_t metrale_status_ = (call);                                               \
    if (metrale_status_ != CUBLAS_STATUS_SUCCESS)                                          \
      ::metrale::reference::cublaslt::throw_cublas_error(metrale_status_, #call, __FILE__, \
                                                         __LINE__);                        \
  } while (0)
