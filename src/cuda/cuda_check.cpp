#include "cuda/cuda_check.hpp"

namespace metrale::cuda {

void throw_cuda_error(cudaError_t err, const char* call, const char* file, int line) {
  int device = -1;
  cudaGetDevice(&device);
  fail(Status::cuda_error, "{} failed on device {}: {} ({}) at {}:{}", call, device,
       cudaGetErrorName(err), cudaGetErrorString(err), file, line);
}

}  // namespace metrale::cuda
