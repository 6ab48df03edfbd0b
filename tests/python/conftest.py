"""Shared helpers of the Python tests: bf16 test matrices, and safetensors files written with the
`safetensors` library itself (so the package's own reader and writer are checked against an
independent implementation of the format)."""

import os
import sys

import ml_dtypes
import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(__file__))  # modelopt_reference

BF16 = ml_dtypes.bfloat16
E4M3 = ml_dtypes.float8_e4m3fn

# safetensors' header names of the NumPy dtypes the tests write.
_HEADER_NAMES = {
    "uint8": "U8",
    "int32": "I32",
    "float32": "F32",
    "bfloat16": "BF16",
    "float8_e4m3fn": "F8_E4M3",
    "float16": "F16",
    "int64": "I64",
}


def write_safetensors(path, tensors, metadata=None):
    """Writes name -> NumPy array with the safetensors library (either of its two Python APIs)."""
    import safetensors

    arrays = {name: np.ascontiguousarray(a) for name, a in tensors.items()}
    if hasattr(safetensors, "TensorSpec"):
        specs = {
            name: safetensors.TensorSpec(
                dtype=a.dtype.name, shape=list(a.shape), data_ptr=a.ctypes.data, data_len=a.nbytes
            )
            for name, a in arrays.items()
        }
    else:
        specs = {
            name: {
                "dtype": _HEADER_NAMES[a.dtype.name],
                "shape": list(a.shape),
                "data": a.tobytes(),
            }
            for name, a in arrays.items()
        }
    safetensors.serialize_file(specs, os.fspath(path), metadata)


def read_safetensors(path):
    """name -> (header dtype name, shape, raw bytes), read with the safetensors library."""
    import safetensors

    with open(path, "rb") as f:
        entries = safetensors.deserialize(f.read())
    return {
        name: (info["dtype"], list(info["shape"]), bytes(info["data"])) for name, info in entries
    }


def bf16(values):
    return np.asarray(values, dtype=np.float32).astype(BF16)


def random_weight(rng, n, k, scale=1.0):
    return bf16(rng.standard_normal((n, k)) * scale)


def grid_weight(rng, n, k):
    """A weight on the NVFP4 grid (every value is e2m1 * e4m3 * scale_2 exactly), so that
    quantize(w) reproduces it and GEMMs with small-integer activations are exact."""
    codes = rng.integers(0, 16, (n, k)).astype(np.uint8)
    values = codes.view(ml_dtypes.float4_e2m1fn).astype(np.float32)
    block_scale = np.float32(2.0) ** rng.integers(-3, 3, (n, k // 16, 1))
    return bf16((values.reshape(n, -1, 16) * block_scale).reshape(n, k))


@pytest.fixture
def rng():
    return np.random.default_rng(20261201)
