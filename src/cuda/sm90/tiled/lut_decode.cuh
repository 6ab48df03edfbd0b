// NVFP4 weight decode into wgmma A fragments, on the tensor-core path of sm_90a (which has no
// e2m1 conversion instruction). Eight e2m1 codes (one 32-bit word, code i in bits 4i..4i+3)
// become four bf16x2 registers through two byte-permute lookup tables (the low and the high byte
// of each magnitude's bf16 pattern), then the sign bits are merged in. The block scale e4m3 is
// converted with the hardware cvt (e4m3x2 -> f16x2) and applied as a bf16 multiply: e2m1 x e4m3
// is exact in bf16 (at most 6 significant bits, magnitudes 2^-10 .. 2688), so the only rounding
// of the weight path is scale_2's, applied in fp32 in the epilogue.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>

#include <cstdint>

#include "cuda/sm90/primitives.cuh"

namespace metrale::cuda::sm90 {

// bf16 bit patterns of the e2m1 magnitudes {0, 0.5, 1, 1.5, 2, 3, 4, 6}, split by byte:
// low bytes {00 00 80 C0 00 40 80 C0}, high bytes {00 3F 3F 3F 40 40 40 40}.
constexpr uint32_t kE2m1LowBytes0 = 0xC0800000u;
constexpr uint32_t kE2m1LowBytes1 = 0xC0804000u;
constexpr uint32_t kE2m1HighBytes0 = 0x3F3F3F00u;
constexpr uint32_t kE2m1HighBytes1 = 0x40404040u;

// Decodes the 8 codes of `codes` into out[j] = {code 2j (low half), code 2j+1 (high half)}.
__device__ __forceinline__ void decode_e2m1x8(uint32_t codes, uint32_t (&out)[4]) {
  const uint32_t magnitudes = codes & 0x77777777u;
  const uint32_t low0 = __byte_perm(kE2m1LowBytes0, kE2m1LowBytes1, magnitudes);
  const uint32_t high0 = __byte_perm(kE2m1HighBytes0, kE2m1HighBytes1, magnitudes);
  const uint32_t low1 = __byte_perm(kE2m1LowBytes0, kE2m1LowBytes1, magnitudes >> 16);
  const uint32_t high1 = __byte_perm(kE2m1HighBytes0, kE2m1HighBytes1, magnitudes >> 16);
  out[0] = __byte_perm(low0, high0, 0x5140);
  out[1] = __byte_perm(low0, high0, 0x7362);
  out[2] = __byte_perm(low1, high1, 0x5140);
  out[3] = __byte_perm(low1, high1, 0x7362);
  // Sign of code 2j is bit 8j+3, of code 2j+1 bit 8j+7: move them to bits 15 and 31.
  const uint32_t shifted = codes << 4;
#pragma unroll
  for (int j = 0; j < 4; ++j) {
    const uint32_t signs = __byte_perm(shifted, codes, (j << 4) | ((4 + j) << 12));
    out[j] |= signs & 0x80008000u;
  }
}

// Two e4m3 block scales (low byte, high byte of `pair`) as bf16x2, exactly.
__device__ __forceinline__ uint32_t e4m3x2_to_bf16x2(uint32_t pair) {
  const __half2_raw halves =
      __nv_cvt_fp8x2_to_halfraw2(static_cast<__nv_fp8x2_storage_t>(pair & 0xFFFFu), __NV_E4M3);
  const float2 values = __half22float2(__half2(halves));
  return as_word(__float22bfloat162_rn(values));
}

}  // namespace metrale::cuda::sm90
