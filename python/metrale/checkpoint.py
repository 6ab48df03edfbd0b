"""NVFP4 checkpoints: ModelOpt and compressed-tensors safetensors, one file or a sharded directory.

    ck = metrale.checkpoint.open("path/to/model")        # detects the format
    w = ck.nvfp4("model.layers.0.self_attn.q_proj")       # Nvfp4Weight(packed, scale, scale_2)
    experts = ck.moe_experts("model.layers.3.mlp.experts")  # {"gate": [...], "up": .., "down": ..}
    tables = experts.to_device("cuda")                   # ExpertTables for the grouped operations

Weights come back as host NumPy arrays in metrale's layouts: packed [N, K/2] uint8, scale [N, K/16]
float8_e4m3fn, scale_2 a float (a bf16 weight_scale_2 is upcast; compressed-tensors'
weight_global_scale, which holds 1/scale_2, is inverted). Everything returned has been validated
first: dtypes and shapes agree, K % 16 == 0, scale_2 finite and > 0, no NaN scale bytes (0x7F,
0xFF); a failure raises CheckpointError naming the file and the tensor, and nothing is returned.
"""

import builtins
import json
import os
import re
from typing import NamedTuple

import ml_dtypes
import numpy as np

from . import _quant_config
from ._errors import CheckpointError
from ._safetensors import SafetensorsFile

# Per-expert projection names: (gate, up, down), as DeepSeek-V3/Qwen3 and as Mixtral store them.
_EXPERT_NAMES = (("gate_proj", "up_proj", "down_proj"), ("w1", "w3", "w2"))
# How a fused gate_up tensor's output rows split: Llama-4 concatenates, gpt-oss interleaves.
GATE_UP_ORDERS = ("chunked", "interleaved")


class Nvfp4Weight(NamedTuple):
    packed: np.ndarray  # [N, K/2] uint8, even k in the low nibble
    scale: np.ndarray  # [N, K/16] float8_e4m3fn
    scale_2: float  # fp32 per-tensor decode scale

    def to_device(self, device="cuda"):
        """The same weight with its arrays on `device` ('cpu': NumPy; 'cuda[:N]': torch)."""
        from ._arrays import to_device

        return Nvfp4Weight(
            to_device(self.packed, device), to_device(self.scale, device), self.scale_2
        )


class MoeExperts(dict):
    """{"gate": [Nvfp4Weight] * E, "up": [...], "down": [...]} for one layer's experts."""

    def to_device(self, device="cuda", *, layout="sfb", prepacked=False):
        """{"gate": ExpertTable, "up": ..., "down": ...}: the device copies, SFB scales and pointer
        tables the grouped operations take. device='cpu' makes host tables for the CPU backend;
        prepacked=True prepacks the weights on the way (expert_table)."""
        from .grouped import expert_table

        return {
            name: expert_table(weights, layout=layout, device=device, prepacked=prepacked)
            for name, weights in self.items()
        }


def open(path):  # noqa: A001  (the name the API documents: metrale.checkpoint.open)
    """A Checkpoint for a .safetensors file or a directory of them."""
    return Checkpoint(path)


class Checkpoint:
    """A read-only NVFP4 checkpoint; `format` is 'modelopt' or 'compressed-tensors'."""

    def __init__(self, path):
        self.path = os.fspath(path)
        if os.path.isdir(self.path):
            self.directory = self.path
            self._files = _directory_files(self.path)
        elif os.path.isfile(self.path):
            self.directory = os.path.dirname(os.path.abspath(self.path))
            self._files = {self.path: SafetensorsFile(self.path)}
        else:
            raise CheckpointError(f"{self.path}: no such file or directory")
        self._where = {}
        for file in self._files.values():
            for name in file.entries:
                if name in self._where:
                    raise CheckpointError(
                        f"{file.path}: tensor {name!r} is also in {self._where[name].path}"
                    )
                self._where[name] = file
        self.format, self.quant_config = _quant_config.detect(self.directory, self._where)

    def names(self):
        return sorted(self._where)

    def __contains__(self, name):
        return name in self._where

    def tensor(self, name):
        """The stored tensor `name` as a read-only NumPy array."""
        if name not in self._where:
            raise CheckpointError(f"{self.path}: no tensor {name!r}")
        return self._where[name].tensor(name)

    def _fail(self, name, what):
        where = self._where[name].path if name in self._where else self.path
        raise CheckpointError(f"{where}: tensor {name!r}: {what}")

    def _suffixes(self):
        if self.format == _quant_config.COMPRESSED_TENSORS:
            return ".weight_packed", ".weight_scale", ".weight_global_scale"
        return ".weight", ".weight_scale", ".weight_scale_2"

    def has_nvfp4(self, name):
        return all(name + s in self._where for s in self._suffixes())

    def nvfp4(self, name):
        """The NVFP4 weight of the Linear `name` (without `.weight`), validated."""
        names = [name + s for s in self._suffixes()]
        for n in names:
            if n not in self._where:
                raise CheckpointError(
                    f"{self.path}: no tensor {n!r} ({self.format} NVFP4 weight "
                    f"{name!r} needs {', '.join(names)})"
                )
        packed_name, scale_name, scale_2_name = names
        packed = self._packed(packed_name, self.tensor(packed_name), ndim=2)
        scale = self._scales(scale_name, self.tensor(scale_name), packed.shape)
        inverted = self.format == _quant_config.COMPRESSED_TENSORS
        scale_2 = self._scale_2(scale_2_name, self.tensor(scale_2_name), 1, inverted)[0]
        return Nvfp4Weight(packed, scale, scale_2)

    def _packed(self, name, packed, ndim):
        if packed.dtype != np.uint8 or packed.ndim != ndim:
            self._fail(
                name,
                f"is {packed.dtype} {list(packed.shape)}, expected uint8 with "
                f"{ndim} dimensions (packed e2m1 pairs)",
            )
        if packed.shape[-1] % 8 != 0 or packed.shape[-1] == 0:
            self._fail(
                name,
                f"has K/2 = {packed.shape[-1]} bytes a row: K = "
                f"{2 * packed.shape[-1]} is not a positive multiple of 16",
            )
        return packed

    def _scales(self, name, scale, expected):
        """The block scales, checked against the packed shape `expected` [..., N, K/2]."""
        want = (*expected[:-1], expected[-1] // 8)
        if scale.dtype not in (np.uint8, np.dtype(ml_dtypes.float8_e4m3fn)):
            self._fail(name, f"has dtype {scale.dtype}, expected float8_e4m3fn")
        if scale.shape != want:
            self._fail(
                name,
                f"has shape {list(scale.shape)}, expected {list(want)} "
                "(one scale per 16 elements of the weight)",
            )
        raw = scale.view(np.uint8)
        bad = np.flatnonzero((raw & 0x7F) == 0x7F)
        if bad.size:
            index = [int(i) for i in np.unravel_index(bad[0], raw.shape)]
            self._fail(
                name,
                f"holds {bad.size} NaN e4m3 bytes (0x7F/0xFF), the first at "
                f"{index}: {raw.reshape(-1)[bad[0]]:#04x}",
            )
        return raw.view(ml_dtypes.float8_e4m3fn)

    def _scale_2(self, name, value, experts, inverted):
        """`experts` fp32 decode scales from a scalar (shared) or per-expert tensor."""
        if value.dtype.name not in ("float32", "bfloat16", "float16"):
            self._fail(name, f"has dtype {value.dtype}, expected float32 (or bf16)")
        if value.size not in (1, experts):
            self._fail(name, f"has shape {list(value.shape)}, expected a scalar or [{experts}]")
        values = value.astype(np.float32).reshape(-1)
        if not np.all(np.isfinite(values) & (values > 0)):
            what = "weight_global_scale" if inverted else "scale_2"
            self._fail(name, f"{what} = {values.tolist()} is not finite and > 0")
        if inverted:
            values = np.float32(1.0) / values
        values = np.broadcast_to(values, (experts,))
        return [float(v) for v in values]

    def moe_experts(self, prefix, *, gate_up_order="chunked"):
        """A layer's experts: per-expert Linears under `prefix` ({prefix}.{e}.gate_proj, ... or
        .w1/.w3/.w2), or the fused 3-D tensors {prefix}.gate_up_proj and {prefix}.down_proj
        (stored transposed, [E, K/2, N]; gate_up's rows split by `gate_up_order`)."""
        for candidate in (prefix, prefix + ".experts"):
            for gate, up, down in _EXPERT_NAMES:
                if self.has_nvfp4(f"{candidate}.0.{gate}"):
                    return self._per_expert(candidate, (gate, up, down))
            if f"{candidate}.gate_up_proj" in self._where:
                return self._fused(candidate, gate_up_order)
        raise CheckpointError(
            f"{self.path}: no experts under {prefix!r} (looked for "
            f"{prefix}.0.gate_proj, {prefix}.0.w1 and {prefix}.gate_up_proj)"
        )

    def _per_expert(self, prefix, projections):
        # Every expert index stored under the prefix, so that a missing expert is an error.
        pattern = re.compile(re.escape(prefix) + r"\.(\d+)\.")
        indices = {int(m.group(1)) for m in map(pattern.match, self._where) if m}
        count = len(indices)
        if indices != set(range(count)):
            missing = sorted(set(range(max(indices) + 1)) - indices)
            raise CheckpointError(
                f"{self.path}: experts under {prefix!r}: indices run to "
                f"{max(indices)} but {missing[:8]} are missing"
            )
        experts = MoeExperts()
        for key, proj in zip(("gate", "up", "down"), projections):
            experts[key] = [self.nvfp4(f"{prefix}.{e}.{proj}") for e in range(count)]
        _check_expert_shapes(self.path, prefix, experts)
        return experts

    def _fused(self, prefix, gate_up_order):
        if gate_up_order not in GATE_UP_ORDERS:
            raise CheckpointError(
                f"gate_up_order = {gate_up_order!r}, expected one of {GATE_UP_ORDERS}"
            )
        experts = MoeExperts()
        gate_up = self._fused_projection(f"{prefix}.gate_up_proj")
        if gate_up[0].packed.shape[0] % 2:
            self._fail(
                f"{prefix}.gate_up_proj", "has an odd number of output rows: no gate/up split"
            )
        half = gate_up[0].packed.shape[0] // 2
        rows = (
            (slice(0, half), slice(half, None))
            if gate_up_order == "chunked"
            else (slice(0, None, 2), slice(1, None, 2))
        )
        for key, r in zip(("gate", "up"), rows):
            experts[key] = [
                Nvfp4Weight(
                    np.ascontiguousarray(w.packed[r]), np.ascontiguousarray(w.scale[r]), w.scale_2
                )
                for w in gate_up
            ]
        experts["down"] = self._fused_projection(f"{prefix}.down_proj")
        _check_expert_shapes(self.path, prefix, experts)
        return experts

    def _fused_projection(self, name):
        """A fused [E, K/2, N] tensor (ModelOpt's export of Llama-4 / gpt-oss experts) as per-expert
        [N, K/2] weights."""
        names = (name, name + "_weight_scale", name + "_weight_scale_2")
        for n in names:
            if n not in self._where:
                raise CheckpointError(
                    f"{self.path}: no tensor {n!r} (fused experts {name!r} need {', '.join(names)})"
                )
        stored = self.tensor(names[0])
        if stored.dtype != np.uint8 or stored.ndim != 3 or stored.shape[0] == 0:
            self._fail(
                names[0],
                f"is {stored.dtype} {list(stored.shape)}, expected uint8 [E, K/2, N] with E >= 1",
            )
        packed = np.ascontiguousarray(stored.transpose(0, 2, 1))
        self._packed(names[0], packed, ndim=3)
        stored_scale = self.tensor(names[1])
        if stored_scale.ndim != 3:
            self._fail(names[1], f"has shape {list(stored_scale.shape)}, expected [E, K/16, N]")
        scale = self._scales(
            names[1], np.ascontiguousarray(stored_scale.transpose(0, 2, 1)), packed.shape
        )
        scale_2 = self._scale_2(names[2], self.tensor(names[2]), packed.shape[0], False)
        return [Nvfp4Weight(packed[e], scale[e], scale_2[e]) for e in range(packed.shape[0])]


def _check_expert_shapes(path, prefix, experts):
    gate, up, down = experts["gate"], experts["up"], experts["down"]
    if not gate or len({len(gate), len(up), len(down)}) != 1:
        raise CheckpointError(
            f"{path}: experts under {prefix!r}: {len(gate)} gate, {len(up)} up, "
            f"{len(down)} down projections"
        )
    for key, weights in experts.items():
        shapes = {w.packed.shape for w in weights}
        if len(shapes) != 1:
            raise CheckpointError(
                f"{path}: experts under {prefix!r}: {key} shapes differ: {sorted(shapes)}"
            )
    n, half_k = gate[0].packed.shape
    if up[0].packed.shape != (n, half_k) or down[0].packed.shape[1] * 2 != n:
        raise CheckpointError(
            f"{path}: experts under {prefix!r}: gate {list(gate[0].packed.shape)}, up "
            f"{list(up[0].packed.shape)}, down {list(down[0].packed.shape)} (packed) do not chain"
        )


def _weight_map(index_path):
    """The index's weight_map, {tensor name: file name}, each file a relative path inside the
    model directory: '../x' or '/x' would read a file the model does not hold."""
    try:
        with builtins.open(index_path, encoding="utf-8") as f:
            index = json.load(f)
    except (OSError, ValueError, RecursionError) as e:  # unreadable, not UTF-8 or JSON, too deep
        raise CheckpointError(f"{index_path}: cannot be read ({type(e).__name__}: {e})") from None
    if not isinstance(index, dict):
        raise CheckpointError(
            f"{index_path}: the file is a JSON {_quant_config.json_type(index)}, expected an "
            "object with weight_map"
        )
    weight_map = index.get("weight_map")
    weight_map = {} if weight_map is None else weight_map  # `or {}` would let [] through
    if not isinstance(weight_map, dict):
        raise CheckpointError(
            f"{index_path}: weight_map is a JSON {_quant_config.json_type(weight_map)}, "
            "expected an object"
        )
    for name, file_name in weight_map.items():
        if not isinstance(file_name, str) or not file_name:
            raise CheckpointError(
                f"{index_path}: tensor {name!r} is in {file_name!r}, expected a file name"
            )
        parts = os.path.normpath(file_name).split(os.sep)
        if os.path.isabs(file_name) or os.pardir in parts:
            raise CheckpointError(
                f"{index_path}: tensor {name!r} is in {file_name!r}, outside the model directory"
            )
    return weight_map


def _directory_files(directory):
    """{path: SafetensorsFile} of a model directory: the files its index names, or every
    .safetensors file in it."""
    index_path = os.path.join(directory, "model.safetensors.index.json")
    if os.path.exists(index_path):
        files = {}
        for name, file_name in sorted(_weight_map(index_path).items()):
            path = os.path.join(directory, file_name)
            if path not in files:
                if not os.path.isfile(path):
                    raise CheckpointError(
                        f"{index_path}: tensor {name!r} is in {file_name}, which does not exist"
                    )
                files[path] = SafetensorsFile(path)
            if name not in files[path].entries:
                raise CheckpointError(
                    f"{index_path}: tensor {name!r} is not in {file_name} "
                    "although the index says so"
                )
        return files
    paths = sorted(
        os.path.join(directory, f) for f in os.listdir(directory) if f.endswith(".safetensors")
    )
    if not paths:
        raise CheckpointError(
            f"{directory}: no .safetensors files and no model.safetensors.index.json"
        )
    return {p: SafetensorsFile(p) for p in paths}
