// Launch sizing shared by the packing kernels (quantize, swizzle, transpose): a grid-stride grid
// of at most `ctas_per_sm` CTAs per SM, enough to keep every SM streaming, never more CTAs than
// there is work; `resident_ctas` (per_device.hpp) for a kernel that loops (all its CTAs resident
// at once). Host only.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstddef>

#include "cuda/cuda_check.hpp"

namespace metrale::cuda::pack {

// CTAs for `work_items` items when one CTA takes `items_per_cta` of them per pass.
inline unsigned grid_size(std::size_t work_items, std::size_t items_per_cta, int ctas_per_sm) {
  int device = 0;
  int sms = 0;
  METRALE_CUDA_CHECK(cudaGetDevice(&device));
  METRALE_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  const std::size_t wanted = (work_items + items_per_cta - 1) / items_per_cta;
  const std::size_t cap = static_cast<std::size_t>(std::max(sms, 1)) * ctas_per_sm;
  return static_cast<unsigned>(std::max<std::size_t>(1, std::min(wanted, cap)));
}

}  // namespace metrale::cuda::pack
