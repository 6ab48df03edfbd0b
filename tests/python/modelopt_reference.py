"""An independent NumPy + ml_dtypes reference of ModelOpt's NVFP4 weight recipe
(NVFP4QTensor.quantize(w, 16), docs NVFP4.md section 4), written from the recipe, sharing no code
with metrale: it is what metrale.quantize must equal byte for byte.

  scale_2 = amax(|w|) / 2688                       fp32
  sf      = block_amax / (6 * scale_2)              fp32; 0 -> 1; clamp [2^-9, 448]; e4m3 (RNE)
  q       = w / (float(sf) * scale_2)               fp32, IEEE division
  code    = e2m1(q), ties to even, saturating; sign bit from q < 0 (so -0.0 -> 0x0)
  packed  = code[even k] | code[odd k] << 4

The e2m1 rounding is done twice, independently: by ml_dtypes' float4_e2m1fn cast and by the
decision-bound table ModelOpt uses; `e2m1_codes` asserts they agree.
"""

import ml_dtypes
import numpy as np

E2M1_BOUNDS = np.array([0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5.0], dtype=np.float32)
# The bounds where a tie goes up (the upper neighbour has the even mantissa).
E2M1_TIES_UP = np.array([0.75, 1.75, 3.5], dtype=np.float32)


def e2m1_codes_by_bounds(q):
    """Codes from the bound table: how many bounds |q| is above, +1 at a bound that ties up."""
    magnitude = np.abs(q)
    count = np.searchsorted(E2M1_BOUNDS, magnitude, side="left").astype(np.uint8)
    tie_up = np.isin(magnitude, E2M1_TIES_UP).astype(np.uint8)
    return ((q < 0).astype(np.uint8) << 3) | (count + tie_up)


def e2m1_codes_by_ml_dtypes(q):
    """Codes from ml_dtypes' round-to-nearest-even cast (saturated first: e2m1 has no Inf)."""
    codes = np.clip(q, -6.0, 6.0).astype(ml_dtypes.float4_e2m1fn).view(np.uint8) & 0xF
    return np.where(q < 0, codes | 0x8, codes & 0x7).astype(np.uint8)


def e2m1_codes(q):
    by_bounds = e2m1_codes_by_bounds(q)
    by_ml_dtypes = e2m1_codes_by_ml_dtypes(q)
    assert np.array_equal(by_bounds, by_ml_dtypes), "the two e2m1 roundings disagree"
    return by_bounds


def quantize(w):
    """w [N, K] ml_dtypes.bfloat16 -> (packed [N, K/2] uint8, scale [N, K/16] uint8, scale_2)."""
    x = np.asarray(w).astype(np.float32)
    n, k = x.shape
    scale_2 = np.float32(np.max(np.abs(x))) / np.float32(2688.0)
    blocks = x.reshape(n, k // 16, 16)
    sf = np.max(np.abs(blocks), axis=-1) / (np.float32(6.0) * scale_2)
    sf = np.where(sf == 0, np.float32(1.0), sf)
    sf = np.clip(sf, np.float32(2.0**-9), np.float32(448.0)).astype(ml_dtypes.float8_e4m3fn)
    q = blocks / (sf.astype(np.float32) * scale_2)[..., None]
    codes = e2m1_codes(q.astype(np.float32)).reshape(n, k)
    packed = (codes[:, 0::2] | (codes[:, 1::2] << 4)).astype(np.uint8)
    return packed, sf.view(np.uint8), float(scale_2)


def dequantize(packed, scale, scale_2):
    """bf16 [N, K] = e2m1 * e4m3 * scale_2 (fp32, one rounding to bf16 at the end)."""
    packed = np.asarray(packed)
    codes = np.stack([packed & 0xF, packed >> 4], axis=-1).reshape(packed.shape[0], -1)
    e2m1 = codes.astype(np.uint8).view(ml_dtypes.float4_e2m1fn).astype(np.float32)
    sf = np.asarray(scale).view(ml_dtypes.float8_e4m3fn).astype(np.float32)
    product = e2m1.reshape(e2m1.shape[0], -1, 16) * sf[..., None]
    return (product * np.float32(scale_2)).reshape(e2m1.shape).astype(ml_dtypes.bfloat16)
