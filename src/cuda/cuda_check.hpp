// CUDA error reporting for the CUDA backend: a failed call becomes metrale::Error with
// Status::cuda_error, naming the call, the device and the error.
#pragma once

#include <cuda_runtime.h>

#include "core/error.hpp"

namespace metrale::cuda {

[[noreturn]] void throw_cuda_error(cudaError_t err, const char* call, const char* file, int line);

}  // namespace metrale::cuda

#define METRALE_CUDA_CHECK(call)                                                      \
  do {                                                                                \
    cudaError_t metrale_err_ = (call);                                                \
    if (metrale_err_ != cudaSuccess)                                                  \
      ::metrale::cuda::throw_cuda_error(metrale_err_, #call, __FILE__, __LINE__);     \
  } while (0)

// After a launch: the launch error, without synchronising, naming the kernel.
#define METRALE_CUDA_CHECK_LAUNCH(kernel_name)                                           \
  do {                                                                                   \
    cudaError_t metrale_err_ = cudaGetLastError();                                       \
    if (metrale_err_ != cudaSuccess)                                                     \
      ::metrale::cuda::throw_cuda_error(metrale_err_, "launch of " #kernel_name, __FILE__, \
                                        __LINE__);                                       \
  } while (0)
