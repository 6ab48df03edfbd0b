"""The three array frameworks metrale takes (NumPy, torch, CuPy): what a caller's array is, its
raw view for the extension, new arrays of the same framework and device, and the stream to run on.

NumPy and CuPy cannot export bfloat16 or float8_e4m3fn through DLPack, so those travel as their
bits (uint16, uint8); torch exports bf16 itself and its float8 as uint8 bytes. NumPy outputs use
ml_dtypes' bfloat16 and float8_e4m3fn, torch its own dtypes, CuPy (which has neither) the bits.
"""

import contextlib
import importlib
import operator

import ml_dtypes
import numpy as np

from ._errors import InvalidArgumentError

BF16 = "bf16"
E4M3 = "e4m3"
U8 = "u8"
F32 = "f32"
I32 = "i32"

_NUMPY_DTYPES = {
    BF16: np.dtype(ml_dtypes.bfloat16),
    E4M3: np.dtype(ml_dtypes.float8_e4m3fn),
    U8: np.dtype(np.uint8),
    F32: np.dtype(np.float32),
    I32: np.dtype(np.int32),
}
_RAW_NUMPY = {np.dtype(ml_dtypes.bfloat16): np.uint16, np.dtype(ml_dtypes.float8_e4m3fn): np.uint8}


def _module_of(x):
    return type(x).__module__.split(".")[0]


def framework(x):
    """'numpy', 'torch' or 'cupy' (anything else is read as NumPy)."""
    name = _module_of(x)
    return name if name in ("torch", "cupy") else "numpy"


def is_device(x):
    """Whether `x` lives in CUDA memory."""
    name = framework(x)
    if name == "torch":
        return x.device.type == "cuda"
    return name == "cupy"


def raw(x):
    """The view of `x` handed to the extension (same memory, a DLPack-exportable dtype)."""
    name = framework(x)
    if name == "torch":
        import torch

        return x.view(torch.uint8) if x.dtype == torch.float8_e4m3fn else x
    if name == "numpy":
        x = np.asarray(x)
        raw_type = _RAW_NUMPY.get(x.dtype)
        return x.view(raw_type) if raw_type is not None else x
    return x


def raw_out(x):
    """raw(x) for an output: an object that is not an array is passed as it is, for the extension
    to refuse by name (np.asarray would make a temporary copy, written and then thrown away)."""
    if framework(x) == "numpy" and not isinstance(x, np.ndarray):
        return x
    return raw(x)


# The dtype names (torch's without "torch.") each kind may arrive as: its own, or its bits.
DTYPE_NAMES = {
    BF16: ("bfloat16", "uint16", "int16"),
    E4M3: ("float8_e4m3fn", "uint8", "int8"),
    U8: ("uint8",),
    F32: ("float32",),
    I32: ("int32",),
}


def dtype_name(x):
    """The name of `x`'s dtype in any framework: 'bfloat16', 'uint8', ... ('' for no dtype)."""
    return str(getattr(x, "dtype", "")).replace("torch.", "")


def is_c_contiguous(x):
    if framework(x) == "torch":
        return x.is_contiguous()
    return bool(x.flags.c_contiguous)


def check(who, name, x, kind, shape, *, contiguous=True, writable=False):
    """Checks the array `x` (argument `name` of `who`) before any work: `kind` (a key of
    DTYPE_NAMES), `shape` (None entries match anything), C-contiguity, and for an output that it
    can be written. Raises InvalidArgumentError naming the argument and the value."""
    if not hasattr(x, "shape") or not hasattr(x, "dtype"):
        raise InvalidArgumentError(f"{who}: {name} is a {type(x).__name__}, not an array")
    if dtype_name(x) not in DTYPE_NAMES[kind]:
        raise InvalidArgumentError(
            f"{who}: {name} has dtype {dtype_name(x)}, expected one of {list(DTYPE_NAMES[kind])}"
        )
    got = tuple(int(d) for d in x.shape)
    if len(got) != len(shape) or any(w is not None and g != w for g, w in zip(got, shape)):
        want = ["*" if w is None else w for w in shape]
        raise InvalidArgumentError(f"{who}: {name} has shape {list(got)}, expected {want}")
    if contiguous and not is_c_contiguous(x):
        raise InvalidArgumentError(f"{who}: {name} of shape {list(got)} is not C-contiguous")
    if writable and framework(x) == "numpy" and not x.flags.writeable:
        raise InvalidArgumentError(
            f"{who}: {name} is read-only (a checkpoint's memory map, or writeable=False); "
            "pass a writable array"
        )
    if writable and framework(x) == "torch" and x.requires_grad:
        import torch

        if torch.is_grad_enabled():  # the extension's writable() rule, for outputs it never sees
            raise InvalidArgumentError(
                f"{who}: {name} requires grad, and metrale's kernels are not differentiable: "
                "pass a tensor that does not require grad, or call under torch.no_grad()"
            )
    return x


_INT32 = (-(2**31), 2**31 - 1)


def int32(who, name, value):
    """`value` as an int, refused (naming `name`) unless it is an integer that fits int32: the
    extension would wrap a larger one, or refuse it with no name."""
    try:
        number = operator.index(value)
    except TypeError:
        raise InvalidArgumentError(f"{who}: {name} = {value!r} is not an integer") from None
    if not _INT32[0] <= number <= _INT32[1]:
        raise InvalidArgumentError(f"{who}: {name} = {number} is outside int32")
    return number


def host_int32(who, name, x):
    """A C-contiguous host int32 copy of the integer array or list `x`, every value checked to fit
    int32 (astype would wrap 2^32 + 6 to 6): the first one that does not is named by index."""
    host = to_numpy(x)
    if host.dtype.kind not in "iu":
        raise InvalidArgumentError(f"{who}: {name} has dtype {host.dtype}, expected int32")
    if host.dtype.itemsize >= 4 and host.dtype != np.int32:
        outside = host > _INT32[1]
        if host.dtype.kind == "i":
            outside |= host < _INT32[0]
        if outside.any():
            index = [int(i) for i in np.unravel_index(np.flatnonzero(outside)[0], host.shape)]
            where = index[0] if len(index) == 1 else index
            raise InvalidArgumentError(
                f"{who}: {name}[{where}] = {host[tuple(index)]} is outside int32"
            )
    return np.ascontiguousarray(host, dtype=np.int32)


# The dtype of each kind in torch and in CuPy (which has no bf16 or e4m3: their bits instead).
_FRAMEWORK_DTYPES = {
    "torch": {BF16: "bfloat16", E4M3: "float8_e4m3fn", U8: "uint8", F32: "float32", I32: "int32"},
    "cupy": {BF16: "uint16", E4M3: "uint8", U8: "uint8", F32: "float32", I32: "int32"},
}


def empty(like, shape, kind):
    """A new array of `kind` in `like`'s framework, on its device."""
    name = framework(like)
    if name == "numpy":
        return np.empty(shape, dtype=_NUMPY_DTYPES[kind])
    module = importlib.import_module(name)
    dtype = getattr(module, _FRAMEWORK_DTYPES[name][kind])
    if name == "torch":
        return module.empty(shape, dtype=dtype, device=like.device)
    with like.device:
        return module.empty(shape, dtype=dtype)


def stream_of(like, stream):
    """The cudaStream_t to run on, as an integer: `stream` if given (an integer, or an object
    with .cuda_stream or .ptr), else torch's or CuPy's current stream for device arrays, else 0."""
    if stream is not None:
        for attribute in ("cuda_stream", "ptr"):
            if hasattr(stream, attribute):
                stream = getattr(stream, attribute)
                break
        try:
            handle = operator.index(stream)
        except TypeError:
            handle = -1
        if not 0 <= handle < 2**64:
            raise InvalidArgumentError(
                f"stream = {stream!r} is not a cudaStream_t: expected an integer handle, or an "
                "object with .cuda_stream or .ptr"
            )
        return handle
    if not is_device(like):
        return 0
    if framework(like) == "torch":
        import torch

        return torch.cuda.current_stream(like.device).cuda_stream
    import cupy

    return cupy.cuda.get_current_stream().ptr


def on_device_of(like):
    """A context that makes `like`'s CUDA device current (the library runs on the current one)."""
    if not is_device(like):
        return contextlib.nullcontext()
    if framework(like) == "torch":
        import torch

        return torch.cuda.device(like.device)
    return like.device


def to_numpy(x):
    """A host NumPy copy (or view) of any framework's array, bf16 and e4m3 kept as such."""
    name = framework(x)
    if name == "torch":
        import torch

        t = x.detach().cpu()
        if t.dtype == torch.bfloat16:
            return t.view(torch.int16).numpy().view(ml_dtypes.bfloat16)
        if t.dtype == torch.float8_e4m3fn:
            return t.view(torch.uint8).numpy().view(ml_dtypes.float8_e4m3fn)
        return t.numpy()
    if name == "cupy":
        return x.get()
    return np.asarray(x)


def from_numpy(host, like):
    """`host` (a NumPy array) copied into `like`'s framework and device."""
    name = framework(like)
    if name == "torch":
        import torch

        # int16 for bf16 bits: older torch cannot take NumPy's uint16.
        if host.dtype == _NUMPY_DTYPES[BF16]:
            t = torch.from_numpy(np.ascontiguousarray(host).view(np.int16)).view(torch.bfloat16)
        elif host.dtype == _NUMPY_DTYPES[E4M3]:
            t = torch.from_numpy(np.ascontiguousarray(host).view(np.uint8)).view(
                torch.float8_e4m3fn
            )
        else:
            t = torch.from_numpy(np.ascontiguousarray(host))
        return t.to(like.device)
    if name == "cupy":
        import cupy

        raw_host = host.view(_RAW_NUMPY[host.dtype]) if host.dtype in _RAW_NUMPY else host
        with like.device:
            return cupy.asarray(raw_host)
    return host


def transposed(x):
    """A C-contiguous transpose of the 2-D array `x`, in its framework and device."""
    if framework(x) == "torch":
        return x.t().contiguous()
    if framework(x) == "cupy":
        import cupy

        return cupy.ascontiguousarray(x.T)
    return np.ascontiguousarray(np.asarray(x).T)


def data_ptr(x):
    """The address of `x`'s first element."""
    name = framework(x)
    if name == "torch":
        return x.data_ptr()
    if name == "cupy":
        return x.data.ptr
    return np.asarray(x).ctypes.data


def device_name(x):
    """'cpu' or 'cuda:N' for any framework's array."""
    name = framework(x)
    if name == "torch":
        if x.device.type != "cuda":
            return x.device.type
        return f"cuda:{x.device.index if x.device.index is not None else 0}"
    if name == "cupy":
        return f"cuda:{x.device.id}"
    return "cpu"


def to_device(x, device):
    """`x` on `device` ('cpu': a NumPy array; 'cuda[:N]': a torch tensor; None: unchanged)."""
    if device is None:
        return x
    if device == "cpu":
        return to_numpy(x)
    import torch

    if framework(x) == "torch":
        return x.to(device)
    return from_numpy(to_numpy(x), torch.empty(0, device=device))
