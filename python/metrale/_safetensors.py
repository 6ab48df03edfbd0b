"""The safetensors file format, read and written with NumPy alone (no torch), every header entry
checked against the file before any tensor is handed out.

A file is: an 8-byte little-endian header length H, H bytes of JSON
({name: {"dtype", "shape", "data_offsets": [begin, end]}, "__metadata__": {...}}), then the data,
offsets relative to its start. Reading memory-maps the file, so a tensor costs nothing until used.
"""

import json
import math
import os

import ml_dtypes
import numpy as np

from ._errors import CheckpointError

DTYPES = {
    "BOOL": np.dtype(np.bool_),
    "U8": np.dtype(np.uint8),
    "I8": np.dtype(np.int8),
    "U16": np.dtype(np.uint16),
    "I16": np.dtype(np.int16),
    "F16": np.dtype(np.float16),
    "BF16": np.dtype(ml_dtypes.bfloat16),
    "U32": np.dtype(np.uint32),
    "I32": np.dtype(np.int32),
    "F32": np.dtype(np.float32),
    "U64": np.dtype(np.uint64),
    "I64": np.dtype(np.int64),
    "F64": np.dtype(np.float64),
    "F8_E4M3": np.dtype(ml_dtypes.float8_e4m3fn),
    "F8_E5M2": np.dtype(ml_dtypes.float8_e5m2),
}
_NAMES = {dtype: name for name, dtype in DTYPES.items()}
_MAX_HEADER = 100 * 1024 * 1024  # the safetensors library's own limit


class SafetensorsFile:
    """One .safetensors file: `entries` (name -> (dtype name, shape, begin, end)), `metadata`, and
    `tensor(name)`, a read-only NumPy view of the memory-mapped data."""

    def __init__(self, path):
        self.path = os.fspath(path)
        if os.path.isdir(self.path):
            self._fail("is a directory, not a safetensors file")
        try:
            header_len, header, size = self._read_header()
        except OSError as e:
            self._fail(f"cannot be read ({e})")
        if not isinstance(header, dict):
            self._fail("header is not a JSON object")
        self.metadata = header.pop("__metadata__", None) or {}
        self._data_start = 8 + header_len
        self._data_len = size - self._data_start
        self.entries = {name: self._entry(name, info) for name, info in header.items()}
        self._map = None

    def _read_header(self):
        """(header length, the header's JSON, file size)."""
        size = os.path.getsize(self.path)
        with open(self.path, "rb") as f:
            prefix = f.read(8)
            if len(prefix) < 8:
                self._fail(f"is {size} bytes, too short for the 8-byte header length")
            header_len = int.from_bytes(prefix, "little")
            if header_len > min(size - 8, _MAX_HEADER):
                self._fail(
                    f"header length {header_len} exceeds the {size - 8} bytes after it "
                    "(truncated or not a safetensors file)"
                )
            try:
                header = json.loads(f.read(header_len))
            except (ValueError, RecursionError) as e:  # not UTF-8, not JSON, nested too deep
                self._fail(f"header is not valid JSON ({type(e).__name__}: {e})")
        return header_len, header, size

    def _fail(self, what, tensor=None):
        where = f"{self.path}: tensor {tensor!r}" if tensor is not None else self.path
        raise CheckpointError(f"{where}: {what}")

    def _entry(self, name, info):
        if not isinstance(info, dict):
            self._fail(f"entry {info!r} is not an object with dtype, shape, data_offsets", name)
        dtype = info.get("dtype")
        if not isinstance(dtype, str) or dtype not in DTYPES:  # a list would be unhashable
            self._fail(f"dtype {dtype!r} is not one of {sorted(DTYPES)}", name)
        shape = info.get("shape")
        if not isinstance(shape, list) or not all(
            isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in shape
        ):
            self._fail(f"shape {shape!r} is not a list of non-negative integers", name)
        # NumPy refuses a shape whose non-zero dimensions multiply past its index range, even
        # when another dimension is 0 ([10^20, 0] holds no bytes).
        if math.prod(d for d in shape if d) * DTYPES[dtype].itemsize >= 2**63:
            self._fail(f"shape {shape} is too large for an array", name)
        offsets = info.get("data_offsets")
        if (
            not isinstance(offsets, list)
            or len(offsets) != 2
            or not all(isinstance(o, int) for o in offsets)
        ):
            self._fail(f"data_offsets {offsets!r} is not [begin, end]", name)
        begin, end = offsets
        expected = math.prod(shape) * DTYPES[info["dtype"]].itemsize
        if not 0 <= begin <= end:
            self._fail(f"data_offsets [{begin}, {end}] are not 0 <= begin <= end", name)
        if end > self._data_len:
            self._fail(
                f"data_offsets [{begin}, {end}] end past the {self._data_len} data bytes "
                "the file has (truncated?)",
                name,
            )
        if end - begin != expected:
            self._fail(
                f"data_offsets [{begin}, {end}] hold {end - begin} bytes but "
                f"{info['dtype']} {shape} needs {expected}",
                name,
            )
        return info["dtype"], tuple(shape), begin, end

    def tensor(self, name):
        if name not in self.entries:
            self._fail("is not in this file", name)
        dtype, shape, begin, end = self.entries[name]
        if begin == end:
            return np.zeros(shape, dtype=DTYPES[dtype])
        if self._map is None:
            self._map = np.memmap(self.path, dtype=np.uint8, mode="r")
        data = self._map[self._data_start + begin : self._data_start + end]
        return data.view(DTYPES[dtype]).reshape(shape)


def dtype_name(array):
    """The safetensors dtype name of a NumPy array."""
    try:
        return _NAMES[array.dtype]
    except KeyError:
        raise CheckpointError(f"dtype {array.dtype} has no safetensors name") from None


def save_file(tensors, path, metadata=None):
    """Writes `tensors` (name -> NumPy array) to `path` as safetensors, data in name order."""
    header, offset = {}, 0
    names = sorted(tensors)
    for name in names:
        array = tensors[name]
        header[name] = {
            "dtype": dtype_name(array),
            "shape": list(array.shape),
            "data_offsets": [offset, offset + array.nbytes],
        }
        offset += array.nbytes
    if metadata:
        header["__metadata__"] = {str(k): str(v) for k, v in metadata.items()}
    encoded = json.dumps(header, separators=(",", ":")).encode()
    encoded += b" " * (-len(encoded) % 8)  # data starts 8-byte aligned, as the library writes it
    with open(path, "wb") as f:
        f.write(len(encoded).to_bytes(8, "little"))
        f.write(encoded)
        for name in names:
            f.write(np.ascontiguousarray(tensors[name]).tobytes())
