"""metrale: NVFP4 MoE GEMM kernels for Python.

Functions take DLPack arrays (torch, CuPy, NumPy with ml_dtypes), run on the inputs' device (host
arrays on the CPU backend, the library's reference oracle) on the caller's current CUDA stream,
and return arrays of the same framework and device. Errors raise ``metrale.Error`` (and
``metrale.InvalidArgumentError``, also a ``ValueError``, for invalid arguments) carrying the
library's message. See docs/python.md.
"""

from . import _metrale
from ._errors import Error, InvalidArgumentError

_metrale.set_error_types(Error, InvalidArgumentError)

from .ops import (  # noqa: E402  (the extension raises the error types: set them first)
    ExpertTable,
    dequantize,
    expert_table,
    gemm,
    grouped_down,
    grouped_gate_up,
    grouped_gate_up_fused,
    moe_forward,
    nvfp4_gemm,
    prepack,
    quantize,
    swizzle_sfb,
    unprepack,
)
from . import checkpoint, convert  # noqa: E402

__version__ = _metrale.version()

from .ops import BACKENDS as _BACKENDS  # noqa: E402


def backends():
    """Which backends this build has: ``{"cpu": "built", "cuda": "not built (...)", ...}``."""
    why = {
        "cuda": "not built: no nvcc when this package was built (a CPU-only build)",
        "cutlass": "not built: no CUTLASS headers when this package was built",
        "cublaslt": "not built: no CUDA toolkit when this package was built",
    }
    return {
        name: "built" if _metrale.backend_built(value) else why.get(name, "not built")
        for name, value in _BACKENDS.items()
    }


__all__ = [
    "Error",
    "InvalidArgumentError",
    "ExpertTable",
    "backends",
    "checkpoint",
    "convert",
    "dequantize",
    "expert_table",
    "gemm",
    "grouped_down",
    "grouped_gate_up",
    "grouped_gate_up_fused",
    "moe_forward",
    "nvfp4_gemm",
    "prepack",
    "quantize",
    "swizzle_sfb",
    "unprepack",
]
