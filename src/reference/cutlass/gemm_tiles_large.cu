// The two large tiles of the CUTLASS sm_90a dense bf16 GEMM (cooperative schedule), one kernel
// each: 128x256 and 256x128 (x64 along K). Split from gemm_tiles_small.cu so that a parallel
// build compiles the five kernels in two translation units at once. See dense_gemm.cuh.
#include "reference/cutlass/dense_gemm.cuh"

METRALE_CUTLASS_DENSE_TILE(m128n256, 128, 256)
METRALE_CUTLASS_DENSE_TILE(m256n128, 256, 128)
