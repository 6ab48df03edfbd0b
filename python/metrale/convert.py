"""`python -m metrale quantize IN OUT`: a bf16 safetensors model (a file, or a directory, sharded or
not) -> a ModelOpt NVFP4 checkpoint in the directory OUT, with the tensor names and the
hf_quant_config.json that vLLM's ModelOpt loader reads.

Every 2-D bf16 `<p>.weight` of a Linear layer (attention, dense MLP and per-expert projections)
becomes `<p>.weight` (packed uint8 [N, K/2]), `<p>.weight_scale` (float8_e4m3fn [N, K/16]),
`<p>.weight_scale_2` (float32 scalar), byte for byte what ModelOpt's NVFP4QTensor.quantize(w, 16)
gives, and `<p>.input_scale` = 1.0 (metrale runs bf16 activations: the W4A4 engines that read it
need a calibrated value instead). Embeddings, norms, routers, lm_head, tensors that are not 2-D
bf16 and Linears whose K is not a multiple of 16 are kept as they are, and the kept Linears are
listed in exclude_modules. Fused 3-D expert tensors ([E, K, N] `experts.gate_up_proj` and
`experts.down_proj`, gpt-oss and Llama-4) are quantized as ModelOpt exports them: one scale_2,
stored transposed as [E, K/2, N] bytes and [E, K/16, N] scales, names suffixed `_weight_scale`,
`_weight_scale_2`, `_input_scale`. Shards map one to one; the other files of IN (config.json,
tokenizer) are copied.

OUT is written all or nothing: the files go into a temporary directory inside OUT and are moved into
place only when every tensor has converted, so a failure leaves OUT as it was (and removes an OUT
this run created). Before anything is written, an output that is one of the input files (IN inside
OUT, a hard link) is refused, as are checkpoint files already in OUT that this conversion would
not replace: with --force they would be read together with the new ones as one checkpoint.
"""

import json
import os
import shutil
import sys
import tempfile

import numpy as np

from . import _metrale, _safetensors, checkpoint
from ._arrays import to_device, to_numpy
from ._errors import CheckpointError, InvalidArgumentError
from .ops import quantize

# Substrings of a module name that mark weights kept in bf16 (ModelOpt leaves these too).
_KEPT = ("embed", "lm_head", "norm", "router", "shared_expert_gate", "wte", "wpe")


def _is_router(module):
    return module.endswith(".gate") or module.endswith(".gating")


# The fused 3-D expert tensors of gpt-oss and Llama-4 ([E, K, N], stored input dimension first).
_FUSED_EXPERTS = ("experts.gate_up_proj", "experts.down_proj")


def plan(name, dtype, shape):
    """'quantize', 'quantize fused' (a 3-D expert tensor) or why `name` is kept ('not a Linear
    weight', 'excluded', a dtype that is not bf16, 'K % 16')."""
    fused = name.endswith(_FUSED_EXPERTS) and len(shape) == 3
    if not fused and (not name.endswith(".weight") or len(shape) != 2):
        return "not a Linear weight"
    module = name if fused else name[: -len(".weight")]
    if any(part in module for part in _KEPT) or _is_router(module):
        return "excluded"
    if dtype != "BF16":
        return f"{dtype}, not bf16"
    if shape[-2 if fused else -1] % 16 != 0:
        return "K % 16"
    return "quantize fused" if fused else "quantize"


class _Progress:
    """A one-line progress bar on stderr: count, percent, the tensor being written."""

    def __init__(self, total, stream=sys.stderr):
        self.total, self.done, self.stream = total, 0, stream

    def step(self, label):
        self.done += 1
        width = 30
        filled = width * self.done // max(self.total, 1)
        self.stream.write(
            f"\r[{'#' * filled}{'.' * (width - filled)}] {self.done}/{self.total} {label[-60:]:<60}"
        )
        self.stream.flush()

    def close(self):
        self.stream.write("\n")
        self.stream.flush()


def _input_files(path):
    if os.path.isdir(path):
        return checkpoint._directory_files(path)
    if not os.path.isfile(path):
        raise CheckpointError(f"{path}: no such file or directory")
    return {path: _safetensors.SafetensorsFile(path)}


def _quantize_on(w, device):
    """(packed, scale, scale_2) of `w` [N, K], quantized on `device`, as host arrays."""
    if device not in (None, "cpu"):
        w = to_device(w, device)
    packed, scale, scale_2 = quantize(w)
    return to_numpy(packed), to_numpy(scale), scale_2


def _quantized(name, w, device):
    """A Linear's `<p>.weight` -> its four ModelOpt tensors."""
    packed, scale, scale_2 = _quantize_on(w, device)
    module = name[: -len(".weight")]
    return {
        f"{module}.weight": packed,
        f"{module}.weight_scale": scale,
        f"{module}.weight_scale_2": np.array(scale_2, dtype=np.float32),
        f"{module}.input_scale": np.array(1.0, dtype=np.float32),
    }


def _quantized_fused(name, w, device):
    """A fused [E, K, N] expert tensor -> ModelOpt's export of it: one quantization of the whole
    tensor (one scale_2, blocks along K), stored transposed back, [E, K/2, N] and [E, K/16, N].
    Quantizing the experts' [N, K] matrices stacked into one [E*N, K] is exactly that, as every
    block lies in one row and only scale_2 spans the tensor."""
    experts, k, n = w.shape
    stacked = np.ascontiguousarray(np.asarray(w).transpose(0, 2, 1)).reshape(experts * n, k)
    packed, scale, scale_2 = _quantize_on(stacked, device)
    return {
        name: np.ascontiguousarray(packed.reshape(experts, n, k // 2).transpose(0, 2, 1)),
        f"{name}_weight_scale": np.ascontiguousarray(
            scale.reshape(experts, n, k // 16).transpose(0, 2, 1)
        ),
        f"{name}_weight_scale_2": np.array(scale_2, dtype=np.float32),
        f"{name}_input_scale": np.array(1.0, dtype=np.float32),
    }


def _check_device(device):
    """Refuses a `device` the conversion cannot run on, before OUT is created."""
    if device in (None, "cpu"):
        return
    if not isinstance(device, str) or not (
        device == "cuda" or (device.startswith("cuda:") and device[5:].isdigit())
    ):
        raise InvalidArgumentError(f"device = {device!r}, expected 'cpu', 'cuda' or 'cuda:N'")
    try:
        import torch
    except ImportError:
        raise InvalidArgumentError(
            f"device = {device!r} quantizes with torch, which is not installed"
        ) from None
    index = int(device[5:]) if ":" in device else 0
    if not torch.cuda.is_available() or index >= torch.cuda.device_count():
        raise InvalidArgumentError(
            f"device = {device!r}: torch sees {torch.cuda.device_count()} CUDA devices"
        )


# The files that make a checkpoint: the conversion writes its own (IN's are not copied), and any
# left in OUT would be read with the new ones.
def _is_checkpoint_file(entry):
    return entry.endswith((".safetensors", ".safetensors.index.json")) or (
        entry == "hf_quant_config.json"
    )


def _output_names(src, files):
    """The names of the files this conversion writes into OUT: the shards, hf_quant_config.json,
    the index of a sharded model, and IN's other files (copied)."""
    names = {os.path.basename(path) for path in files} | {"hf_quant_config.json"}
    if len(files) > 1:
        names.add("model.safetensors.index.json")
    return names | set(_copied_files(src))


def _copied_files(src):
    """IN's files other than the checkpoint's own, copied to OUT as they are."""
    if not os.path.isdir(src):
        return []
    return [
        entry
        for entry in sorted(os.listdir(src))
        if os.path.isfile(os.path.join(src, entry)) and not _is_checkpoint_file(entry)
    ]


def _check_output(src, dst, files, force):
    """Refuses, before anything is written: an OUT that is not a directory, a non-empty OUT without
    --force, an output that is one of the input files, and checkpoint files in OUT this
    conversion would not replace."""
    if os.path.exists(dst) and not os.path.isdir(dst):
        raise CheckpointError(f"{dst} exists and is not a directory: OUT must be a directory")
    if not os.path.isdir(dst):
        return
    present = sorted(os.listdir(dst))
    if present and not force:
        raise CheckpointError(f"{dst} exists and is not empty: pass --force to overwrite it")
    names = _output_names(src, files)
    inputs = list(files) + [os.path.join(src, e) for e in _copied_files(src)]
    for name in sorted(names):
        target = os.path.join(dst, name)
        if not os.path.exists(target):
            continue
        for source in inputs:
            if os.path.samefile(target, source):
                raise CheckpointError(
                    f"{target} would be written but it is the input file {source}: "
                    "choose an OUT that does not hold the input"
                )
    stale = [e for e in present if _is_checkpoint_file(e) and e not in names]
    if stale:
        raise CheckpointError(
            f"{dst} holds checkpoint files this conversion would not replace: {stale}; "
            "they would be read with the new ones as one checkpoint: remove them first"
        )


def convert(src, dst, *, force=False, device=None, progress=True):
    """Quantizes the model at `src` into the directory `dst`; returns {"quantized": [...],
    "kept": [...]} module/tensor names. All or nothing (the module docstring)."""
    src, dst = os.fspath(src), os.fspath(dst)
    _check_device(device)
    files = _input_files(src)
    _check_output(src, dst, files, force)
    created = not os.path.exists(dst)
    os.makedirs(dst, exist_ok=True)
    staging = tempfile.mkdtemp(prefix=".metrale-quantize-", dir=dst)
    try:
        result = _convert_into(src, staging, files, device, progress)
        for entry in sorted(os.listdir(staging)):
            os.replace(os.path.join(staging, entry), os.path.join(dst, entry))
    finally:
        shutil.rmtree(staging, ignore_errors=True)
        if created and not os.listdir(dst):
            os.rmdir(dst)
    return result


def _convert_into(src, dst, files, device, progress):
    """The conversion proper, into the (empty, temporary) directory `dst`."""
    total = sum(len(f.entries) for f in files.values())
    bar = _Progress(total) if progress else None
    try:
        weight_map, excluded, result = _convert_files(dst, files, device, bar)
    finally:
        if bar:
            bar.close()  # the error message, if any, starts on a line of its own
    _write_metadata(src, dst, files, weight_map, excluded)
    return result


def _convert_files(dst, files, device, bar):
    """Each input file into its shard in `dst`; returns (weight_map, excluded modules, result)."""
    weight_map, quantized, excluded, kept = {}, [], [], []
    for path, file in files.items():
        out = {}
        for name, (dtype, shape, _, _) in sorted(file.entries.items()):
            decision = plan(name, dtype, shape)
            try:
                _convert_tensor(file, name, decision, device, out)
            except Exception as e:
                raise CheckpointError(f"converting {name} of {path}: {e}") from e
            if decision in ("quantize", "quantize fused"):
                quantized.append(name.removesuffix(".weight") if decision == "quantize" else name)
            else:
                kept.append(name)
                if decision != "not a Linear weight":
                    excluded.append(name.removesuffix(".weight"))
            if bar:
                bar.step(name)
        out_name = os.path.basename(path)
        try:
            _safetensors.save_file(out, os.path.join(dst, out_name), {"format": "pt"})
        except OSError as e:
            raise CheckpointError(f"writing {out_name} (from {path}): {e}") from e
        weight_map.update({name: out_name for name in out})
    return weight_map, excluded, {"quantized": quantized, "kept": kept}


def _convert_tensor(file, name, decision, device, out):
    """Adds tensor `name` of `file`, converted as `decision` says, to `out`."""
    if decision == "quantize":
        out.update(_quantized(name, file.tensor(name), device))
    elif decision == "quantize fused":
        out.update(_quantized_fused(name, file.tensor(name), device))
    else:
        out[name] = file.tensor(name)


def _write_metadata(src, dst, files, weight_map, excluded):
    config = {
        "producer": {"name": "metrale", "version": _metrale.version()},
        "quantization": {
            "quant_algo": "NVFP4",
            "kv_cache_quant_algo": None,
            "group_size": 16,
            "exclude_modules": sorted(excluded),
        },
    }
    with open(os.path.join(dst, "hf_quant_config.json"), "w") as f:
        json.dump(config, f, indent=2)
    if len(files) > 1:
        total_size = sum(os.path.getsize(os.path.join(dst, f)) for f in set(weight_map.values()))
        with open(os.path.join(dst, "model.safetensors.index.json"), "w") as f:
            json.dump(
                {"metadata": {"total_size": total_size}, "weight_map": weight_map}, f, indent=2
            )
    for entry in _copied_files(src):
        shutil.copyfile(os.path.join(src, entry), os.path.join(dst, entry))
