// The interface between blackwell.cu (compiled in every CUTLASS build, sm_90a) and
// sm100/w4a4_gemm.cu (compiled only with METRALE_CUTLASS_SM100=ON, for sm_100a as well): the
// device checks and validation live in blackwell.cu, the kernels in w4a4_gemm.cu. Host only.
#pragma once

#include <cstddef>

#include "core/workspace.hpp"
#include "metrale/metrale.hpp"

namespace metrale::reference::cutlass::detail {

// Arguments already validated, device checked to be sm_100 (CC 10.0), M >= 1.
void run_w4a4_sm100(const Nvfp4Gemm& args, core::Buffer ws, void* stream, int device,
                    int sm_count, const char* who);
std::size_t w4a4_sm100_workspace_size(int m, int n, int k, int sm_count);

}  // namespace metrale::reference::cutlass::detail
