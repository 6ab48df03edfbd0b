// Every backend the API dispatches to, each header included only under its build gate, so a build
// without CUTLASS links no CUTLASS code at all. The CPU and CUDA backends' headers are always
// there (a build without CUDA has no CUDA backend to select, see select_backend).
#pragma once

#include "cpu/cpu_backend.hpp"
#include "cuda/cuda_backend.hpp"

#ifdef METRALE_HAS_CUDA
#include "reference/cublaslt/cublaslt_backend.hpp"
#endif
#ifdef METRALE_HAS_CUTLASS
#include "reference/cutlass/cutlass_backend.hpp"
#endif
