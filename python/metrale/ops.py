"""The operations: quantize and dequantize, the SFB swizzle, prepacking, the dense and NVFP4 GEMMs.

Layouts (all row-major): w [N, K] bf16; packed [N, K/2] uint8 (two e2m1 codes a byte, even k in
the low nibble); scale [N, K/16] e4m3 (the checkpoint layout, as ModelOpt writes it); scale_2 a
Python float, the fp32 per-tensor decode scale: w = e2m1 * e4m3 * scale_2. The grouped (per-expert)
operations are in grouped.py.
"""

from . import _arrays, _metrale, _recipe
from ._arrays import BF16, E4M3, F32, U8
from ._errors import InvalidArgumentError

# metrale::Backend values (include/metrale/metrale.hpp).
BACKENDS = {"cpu": 1, "cuda": 2, "cutlass": 3, "cublaslt": 4}

# metrale::ScaleLayout values, and the checkpoint layout that is swizzled before a call.
SCALE_LAYOUTS = {"k16_by_n": 0, "sfb": 1}
_AUTO_BACKEND = -1


def _backend_arg(backend):
    """-1 (follow the inputs' device) or a metrale::Backend value from its name."""
    if backend is None:
        return _AUTO_BACKEND
    if backend not in BACKENDS:
        raise InvalidArgumentError(f"backend = {backend!r} is not one of {sorted(BACKENDS)}")
    return BACKENDS[backend]


def _invoke(function, like, args, backend, stream):
    """Runs the extension's `function` on `like`'s device with `args`, the backend and stream."""
    with _arrays.on_device_of(like):
        function(*args, _backend_arg(backend), _arrays.stream_of(like, stream))


def _shape2(who, name, x):
    shape = tuple(x.shape)
    if len(shape) != 2:
        raise InvalidArgumentError(f"{who}: {name} has shape {list(shape)}, expected 2 dimensions")
    return shape


def _quantize_out(n, k, out):
    """The caller's (packed, scale) buffers, both checked before either is written. A uint8 scale
    takes the e4m3 bytes, as every function here takes e4m3 as its bytes."""
    who = "metrale.quantize"
    if not isinstance(out, (tuple, list)) or len(out) != 2:
        raise InvalidArgumentError(
            f"{who}: out is a {type(out).__name__}, expected (packed, scale)"
        )
    packed, scale = out
    _arrays.check(who, "out[0]", packed, U8, (n, k // 2), writable=True)
    # out[1] is assigned into, not handed to the library: any strides do.
    _arrays.check(who, "out[1]", scale, E4M3, (n, k // 16), contiguous=False, writable=True)
    return packed, scale


def quantize(w, *, out=None, stream=None, backend=None):
    """w [N, K] bf16 -> (packed [N, K/2] uint8, scale [N, K/16] e4m3, scale_2 float), byte for
    byte ModelOpt's NVFP4QTensor.quantize(w, 16) (including its +0 code for a -0.0 quotient).
    `out=(packed, scale)` writes into the caller's buffers (scale e4m3, or uint8: its bytes)."""
    n, k = _shape2("metrale.quantize", "w", w)
    if out is not None:
        packed, scale_out = _quantize_out(n, k, out)
    else:
        packed, scale_out = _arrays.empty(w, (n, k // 2), U8), None
    scale_kn = _arrays.empty(w, (k // 16, n), E4M3)
    scale_2 = _arrays.empty(w, (1,), F32)
    raw = _arrays.raw
    args = [raw(w), _arrays.raw_out(packed), raw(scale_kn), raw(scale_2)]
    _invoke(_metrale.quantize, w, args, backend, stream)
    with _arrays.on_device_of(w):
        scale = _arrays.transposed(scale_kn)
        value = float(_arrays.to_numpy(scale_2)[0])
        _recipe.apply_modelopt_zero_sign(w, packed, scale, value)
        if scale_out is not None:
            raw(scale_out)[...] = raw(scale)  # bytes to bytes: no value conversion
            scale = scale_out
    return packed, scale, value


def dequantize(packed, scale, scale_2):
    """(packed [N, K/2], scale [N, K/16], scale_2) -> w [N, K] bf16, in packed's framework."""
    who = "metrale.dequantize"
    n, half_k = _shape2(who, "packed", packed)
    if half_k % 8:
        raise InvalidArgumentError(f"{who}: packed has K/2 = {half_k}: K is not a multiple of 16")
    _arrays.check(who, "packed", packed, U8, (n, half_k), contiguous=False)
    _arrays.check(who, "scale", scale, E4M3, (n, half_k // 8), contiguous=False)
    if _arrays.device_name(scale) != _arrays.device_name(packed):
        raise InvalidArgumentError(
            f"{who}: scale is on {_arrays.device_name(scale)} but packed is on "
            f"{_arrays.device_name(packed)}"
        )
    try:
        scale_2 = float(scale_2)
    except (TypeError, ValueError):
        raise InvalidArgumentError(f"{who}: scale_2 = {scale_2!r} is not a number") from None
    return _recipe.dequantize(packed, scale, scale_2)


def swizzle_sfb(
    scale, *, n=None, k=None, src_layout="n_by_k16", out=None, stream=None, backend=None
):
    """Block scales [N, K/16] (or [K/16, N] with src_layout="k16_by_n") -> the 128x4 swizzled SFB
    layout (a 1-D e4m3 array of metrale's sfb_bytes(N, K), padding zeroed)."""
    rows, cols = _shape2("metrale.swizzle_sfb", "scale", scale)
    if src_layout not in ("n_by_k16", "k16_by_n"):
        raise InvalidArgumentError(
            f"metrale.swizzle_sfb: src_layout = {src_layout!r}, expected 'n_by_k16' or 'k16_by_n'"
        )
    n_major = src_layout == "k16_by_n"
    who = "metrale.swizzle_sfb"
    n = _arrays.int32(who, "n", n if n is not None else (cols if n_major else rows))
    k = _arrays.int32(who, "k", k if k is not None else 16 * (rows if n_major else cols))
    if out is None:
        out = _arrays.empty(scale, (_metrale.sfb_bytes(n, k),), E4M3)
    args = [_arrays.raw(scale), _arrays.raw_out(out), n, k, n_major]
    _invoke(_metrale.swizzle_sfb, scale, args, backend, stream)
    return out


def prepack(packed, *, out=None, stream=None, backend=None):
    """packed [N, K/2] uint8 -> the same bytes in the prepacked layout (docs/api.md, "Prepacked
    weights"), which the CUDA kernels decode in fewer operations; expert_table(...,
    prepacked=True) prepacks a layer's experts for the grouped operations and moe_forward.
    `out=packed` converts in place."""
    return _prepack("metrale.prepack", packed, True, out, stream, backend)


def unprepack(prepacked, *, out=None, stream=None, backend=None):
    """The inverse of prepack: prepacked [N, K/2] bytes back in the packed layout."""
    return _prepack("metrale.unprepack", prepacked, False, out, stream, backend)


def _prepack(who, src, to_prepacked, out, stream, backend):
    _shape2(who, "packed", src)
    out = out if out is not None else _arrays.empty(src, tuple(src.shape), U8)
    raw = _arrays.raw
    _invoke(_metrale.prepack, src, [raw(src), _arrays.raw_out(out), to_prepacked], backend, stream)
    return out


def gemm(act, weight, *, out=None, stream=None, backend=None):
    """out [M, N] = act [M, K] @ weight [N, K]^T, bf16 in and out, fp32 accumulation."""
    m, _ = _shape2("metrale.gemm", "act", act)
    n, _ = _shape2("metrale.gemm", "weight", weight)
    out = out if out is not None else _arrays.empty(act, (m, n), BF16)
    raw = _arrays.raw
    _invoke(_metrale.gemm, act, [raw(act), raw(weight), _arrays.raw_out(out)], backend, stream)
    return out


def nvfp4_gemm(
    act, packed, scale, scale_2, *, scale_layout="n_by_k16", out=None, stream=None, backend=None
):
    """out [M, N] = act [M, K] @ (e2m1 * e4m3 * scale_2)^T. `scale` is [N, K/16] (the checkpoint
    layout: swizzled to SFB for the call), [K/16, N] with scale_layout="k16_by_n", or SFB bytes
    with scale_layout="sfb"."""
    m, k = _shape2("metrale.nvfp4_gemm", "act", act)
    n, _ = _shape2("metrale.nvfp4_gemm", "packed", packed)
    if scale_layout == "n_by_k16":
        scale = swizzle_sfb(scale, n=n, k=k, stream=stream, backend=backend)
        scale_layout = "sfb"
    if scale_layout not in SCALE_LAYOUTS:
        raise InvalidArgumentError(
            f"metrale.nvfp4_gemm: scale_layout = {scale_layout!r}, expected "
            "'n_by_k16', 'k16_by_n' or 'sfb'"
        )
    out = out if out is not None else _arrays.empty(act, (m, n), BF16)
    raw = _arrays.raw
    args = [
        raw(act),
        raw(packed),
        raw(scale),
        float(scale_2),
        SCALE_LAYOUTS[scale_layout],
        _arrays.raw_out(out),
    ]
    _invoke(_metrale.nvfp4_gemm, act, args, backend, stream)
    return out


from .grouped import (  # noqa: E402,F401  (re-exported: grouped.py imports the helpers above)
    ExpertTable,
    expert_table,
    grouped_down,
    grouped_gate_up,
    grouped_gate_up_fused,
)
from .moe import moe_forward  # noqa: E402,F401  (re-exported)
