// A value computed once per CUDA device and cached, for what does not change while a process runs
// (device attributes, kernel attributes set, occupancy answers). Host only.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <map>
#include <mutex>
#include <utility>

#include "cuda/cuda_check.hpp"

namespace metrale::cuda {

// compute(device) for the current device and `key`, computed on the first call and cached (one
// cache per call site: each passes its own lambda type); without a current device,
// no_device(the error of cudaGetDevice), uncached.
template <class Key, class Compute, class NoDevice>
auto once_per_device(const Key& key, Compute&& compute, NoDevice&& no_device) {
  using Value = decltype(compute(0));
  static std::mutex mutex;
  static std::map<std::pair<int, Key>, Value> values;
  int device = 0;
  if (const cudaError_t err = cudaGetDevice(&device); err != cudaSuccess) return no_device(err);
  std::lock_guard<std::mutex> lock(mutex);
  auto it = values.find({device, key});
  if (it == values.end()) it = values.emplace(std::pair{device, key}, compute(device)).first;
  return it->second;
}

// How many CTAs of `kernel` (`threads` each, static shared memory only) one SM holds at once.
template <class Kernel>
int resident_ctas(Kernel* kernel, int threads) {
  int ctas = 0;
  METRALE_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&ctas, kernel, threads, 0));
  return std::max(ctas, 1);
}

}  // namespace metrale::cuda
