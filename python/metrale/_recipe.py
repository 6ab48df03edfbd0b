"""The parts of the NVFP4 recipe that the Python package computes itself, in array operations that
run in the caller's framework and on its device (NumPy and CuPy share one form, torch has its own):

- ModelOpt's sign rule. ModelOpt (NVFP4QTensor._cast_fp4) sets the sign bit of a code from
  `scaled < 0`, where `scaled = w / (float(sf) * scale_2)` in fp32, so a quotient of -0.0 (a -0.0
  input, or a tiny negative whose quotient underflows) gets the +0 code 0x0. metrale's quantizers
  (src/format/e2m1.hpp, and the CUDA quantizer's division-free form of it) keep the sign bit and
  give 0x8, which decodes to the same zero. `quantize` applies ModelOpt's rule on top of the
  library's result, so its bytes equal ModelOpt's; the library's rule is left as it is (the CPU and
  CUDA quantizers agree bit for bit on it and their tests pin it).
- Dequantization: w = e2m1(code) * e4m3(sf) * scale_2 in fp32 (the first product is exact), then
  rounded to bf16, as format::dequantize computes it.
"""

import ml_dtypes
import numpy as np

from . import _arrays

E2M1_VALUES = np.array(
    [0, 0.5, 1, 1.5, 2, 3, 4, 6, -0.0, -0.5, -1, -1.5, -2, -3, -4, -6], dtype=np.float32
)
E4M3_VALUES = np.arange(256, dtype=np.uint8).view(ml_dtypes.float8_e4m3fn).astype(np.float32)


def _numpy_like(x):
    if _arrays.framework(x) == "cupy":
        import cupy

        return cupy
    return np


def _as_float32_numpy(xp, w):
    """bf16 (as ml_dtypes.bfloat16 or its uint16 bits) -> fp32, exactly."""
    bits = w.view(xp.uint16).astype(xp.uint32) << 16
    return bits.view(xp.float32)


def apply_modelopt_zero_sign(w, packed, scale, scale_2):
    """Clears the sign bit of every code whose fp32 quotient is -0.0 (module docstring).
    w [N, K] bf16, packed [N, K/2] uint8, scale [N, K/16] e4m3; packed is changed in place."""
    if _arrays.framework(w) == "torch":
        return _apply_modelopt_zero_sign_torch(w, packed, scale, scale_2)
    xp = _numpy_like(w)
    n, k = w.shape
    x = _as_float32_numpy(xp, w).reshape(n, k // 16, 16)
    d = xp.asarray(E4M3_VALUES)[scale.view(xp.uint8)] * xp.float32(scale_2)
    q = x / d[..., None]
    neg_zero = ((q == 0) & xp.signbit(q)).reshape(n, k)
    if not bool(neg_zero.any()):
        return
    raw = packed.view(xp.uint8)
    clear = neg_zero[:, 0::2].astype(xp.uint8) * 0x08 | neg_zero[:, 1::2].astype(xp.uint8) * 0x80
    raw &= ~clear


def _apply_modelopt_zero_sign_torch(w, packed, scale, scale_2):
    import torch

    n, k = w.shape
    x = w.view(torch.bfloat16).float().reshape(n, k // 16, 16)
    lut = torch.from_numpy(E4M3_VALUES).to(w.device)
    d = lut[scale.view(torch.uint8).long()] * torch.tensor(
        scale_2, dtype=torch.float32, device=w.device
    )
    q = x / d.unsqueeze(-1)
    neg_zero = ((q == 0) & torch.signbit(q)).reshape(n, k)
    clear = neg_zero[:, 0::2].to(torch.uint8) * 0x08 | neg_zero[:, 1::2].to(torch.uint8) * 0x80
    packed.bitwise_and_(~clear)


def dequantize(packed, scale, scale_2):
    """bf16 [N, K] from packed [N, K/2], scale [N, K/16], scale_2, in packed's framework."""
    if _arrays.framework(packed) == "torch":
        return _dequantize_torch(packed, scale, scale_2)
    xp = _numpy_like(packed)
    raw = packed.view(xp.uint8)
    n, half_k = raw.shape
    codes = xp.empty((n, half_k * 2), dtype=xp.uint8)
    codes[:, 0::2] = raw & 0xF
    codes[:, 1::2] = raw >> 4
    sf = xp.asarray(E4M3_VALUES)[scale.view(xp.uint8)]
    values = xp.asarray(E2M1_VALUES)[codes].reshape(n, -1, 16) * sf[..., None]
    values = (values * xp.float32(scale_2)).reshape(n, half_k * 2)
    if xp is np:
        return values.astype(ml_dtypes.bfloat16)
    return _float32_to_bf16_bits(xp, values)


def _float32_to_bf16_bits(xp, values):
    """fp32 -> bf16 bits, round to nearest even (CuPy has no bf16 type); NaN stays NaN."""
    bits = values.view(xp.uint32)
    rounded = (bits + 0x7FFF + ((bits >> 16) & 1)) >> 16
    nan = xp.isnan(values)
    return xp.where(nan, (bits >> 16) | 0x40, rounded).astype(xp.uint16)


def _dequantize_torch(packed, scale, scale_2):
    import torch

    raw = packed.view(torch.uint8)
    n, half_k = raw.shape
    codes = torch.stack([raw & 0xF, raw >> 4], dim=-1).reshape(n, half_k * 2).long()
    e2m1 = torch.from_numpy(E2M1_VALUES).to(packed.device)
    e4m3 = torch.from_numpy(E4M3_VALUES).to(packed.device)
    sf = e4m3[scale.view(torch.uint8).long()]
    values = e2m1[codes].reshape(n, -1, 16) * sf.unsqueeze(-1)
    values = values * torch.tensor(scale_2, dtype=torch.float32, device=packed.device)
    return values.reshape(n, half_k * 2).to(torch.bfloat16)
