// The NVFP4 quantization recipe of NVIDIA ModelOpt (NVFP4.md §3-4), piece by piece, so that the
// CPU quantizer and the CUDA quantizer call the same code and agree bit for bit by construction:
//   scale_2 = amax(|W|) / 2688                       (fp32, per tensor)
//   sf      = e4m3(clamp(block_amax / (6·scale_2)))  (per 16 elements along K)
//   code    = e2m1(x / (float(sf)·scale_2))          (IEEE division, no reciprocal)
//   w       = e2m1(code) · e4m3(sf) · scale_2        (dequantization)
// Host and device, any arch.
#pragma once

#include <cstdint>

#include "format/e2m1.hpp"
#include "format/e4m3.hpp"
#include "format/host_device.hpp"

namespace metrale::format {

// 6 (largest e2m1) × 448 (largest e4m3): amax maps onto the top of both grids.
inline constexpr float kScale2Divisor = 2688.0f;
inline constexpr int kBlockSize = 16;  // elements along K per e4m3 scale

// One step of the amax reduction: max(running, |x|), where a NaN x is ignored (like fmaxf on
// host and device). Order-independent, so any reduction tree gives the same amax.
METRALE_HD inline float amax_update(float running, float x) {
  const float a = bits_to_float(float_to_bits(x) & 0x7FFFFFFFu);
  return a > running ? a : running;
}

// Per-tensor decode scale. Defined for every input so that it is always finite and > 0:
// amax = 0 (an all-zero tensor) gives 1 — every block then takes sf = 1 and every code is 0, so
// the value is arbitrary but must be a valid scale_2. Likewise 1 for a non-finite amax (a weight
// holding ±Inf) and for a quotient that underflows to 0: an amax below about 2^-137 (bf16
// subnormal weights; every code then rounds to ±0, as it would at any valid scale_2). Between
// that and 2^-126 the quotient is an fp32 subnormal, with fewer significant bits.
METRALE_HD inline float scale_2_from_amax(float amax) {
  const float scale_2 = amax / kScale2Divisor;
  const bool finite_positive = scale_2 > 0.0f && scale_2 <= 3.4028234663852886e38f;
  return finite_positive ? scale_2 : 1.0f;
}

// The block scale before its rounding to e4m3. `6·scale_2` is rounded to fp32 first and then
// divides, as ModelOpt computes `per_block_amax / (6.0 * weight_scale_2)`. A quotient of exactly
// 0 (an all-zero block) becomes 1.0; then clamp to [2^-9, 448] (a NaN quotient, from a NaN
// scale_2, is sent to 448 so that no NaN scale byte is ever written).
METRALE_HD inline float block_scale_value(float block_amax, float scale_2) {
  float sf = block_amax / (6.0f * scale_2);
  if (sf == 0.0f) sf = 1.0f;
  if (is_nan_bits(sf)) sf = kE4m3Max;
  sf = sf < kE4m3MinSubnormal ? kE4m3MinSubnormal : sf;
  return sf > kE4m3Max ? kE4m3Max : sf;
}

// The e4m3 byte of one block: its value rounded to nearest even.
METRALE_HD inline std::uint8_t block_scale_e4m3(float block_amax, float scale_2) {
  return float_to_e4m3(block_scale_value(block_amax, scale_2));
}

// The e2m1 code of one element, given its block's scale byte: fp32 product of the decoded scale
// and scale_2, then an IEEE division (never a reciprocal multiply, which can land one code away
// at exact ties), then round to nearest even on the e2m1 grid.
METRALE_HD inline std::uint8_t quantize_to_e2m1(float x, std::uint8_t scale_e4m3, float scale_2) {
  const float denominator = e4m3_to_float(scale_e4m3) * scale_2;
  return float_to_e2m1(x / denominator);
}

// e2m1 × e4m3 is exact in fp32 (and in bf16); scale_2 is applied with one fp32 multiply.
METRALE_HD inline float dequantize(std::uint8_t code, std::uint8_t scale_e4m3, float scale_2) {
  return e2m1_to_float(code) * e4m3_to_float(scale_e4m3) * scale_2;
}

}  // namespace metrale::format
