// The three small tiles of the CUTLASS sm_90a dense bf16 GEMM, one kernel each: 64x128 and 64x64
// (ping-pong schedule) and 128x64 (cooperative), x64 along K. They serve decode-sized M and
// problems too small to fill the GPU with the large tiles. See dense_gemm.cuh.
#include "reference/cutlass/dense_gemm.cuh"

METRALE_CUTLASS_DENSE_TILE(m64n128, 64, 128)
METRALE_CUTLASS_DENSE_TILE(m128n64, 128, 64)
METRALE_CUTLASS_DENSE_TILE(m64n64, 64, 64)
