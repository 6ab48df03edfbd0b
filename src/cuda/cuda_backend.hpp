// The CUDA backend: our own kernels (src/cuda/sm90/ for Hopper). Arguments arrive validated and
// on device memory; `ws` is the resolved workspace. Each function throws metrale::Error with
// Status::unsupported (naming the device's arch and the archs built) when it cannot run, and
// Status::cuda_error naming the call, the device and the error when CUDA fails.
#pragma once

#include <cstddef>
#include <string>

#include "metrale/metrale.hpp"

namespace metrale::cuda {

struct Workspace {
  void* ptr = nullptr;
  std::size_t size = 0;
};

// True when this build has the CUDA backend and the current device can run its kernels;
// otherwise `why` says which of the two is missing.
bool available(std::string* why);

void bf16_gemm(const DenseGemm& args, Workspace ws, void* stream);
void nvfp4_gemm(const Nvfp4Gemm& args, Workspace ws, void* stream);
void pack_nvfp4(const PackNvfp4& args, Workspace ws, void* stream);
void swizzle_scales(const SwizzleScales& args, void* stream);
void transpose_packed(const TransposePacked& args, void* stream);
void nvfp4_grouped(const GroupedNvfp4& args, Workspace ws, void* stream);

std::size_t nvfp4_grouped_workspace_size(const ExpertGroups& groups, int n, int k, int proj_count);

}  // namespace metrale::cuda
