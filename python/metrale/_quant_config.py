"""Which NVFP4 checkpoint format a model directory holds, from its configuration files:
hf_quant_config.json (ModelOpt), or config.json's quantization_config with quant_method "modelopt"
or "compressed-tensors" (llm-compressor's nvfp4-pack-quantized). Without either, the tensor names
decide (a lone .safetensors file written by a test or copied out of a model)."""

import json
import os

from ._errors import CheckpointError

MODELOPT = "modelopt"
COMPRESSED_TENSORS = "compressed-tensors"
GROUP_SIZE = 16


def _read_json(path):
    """The JSON object in `path`: anything else (a list, not UTF-8, nested too deep) is refused."""
    try:
        with open(path, encoding="utf-8") as f:
            value = json.load(f)
    except (OSError, ValueError, RecursionError) as e:
        raise CheckpointError(
            f"{path}: cannot be read as JSON ({type(e).__name__}: {e})"
        ) from None
    return _object(path, "the file", value)


_JSON_TYPES = {list: "array", str: "string", int: "number", float: "number", bool: "boolean"}


def json_type(value):
    """The JSON name of a parsed value's type, for messages."""
    return "null" if value is None else _JSON_TYPES.get(type(value), type(value).__name__)


def _object(path, what, value):
    """`value` if it is a JSON object (a dict; null or absent: {}), else CheckpointError naming
    `what` in `path` (`or {}` would let an empty list through)."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise CheckpointError(f"{path}: {what} is a JSON {json_type(value)}, expected an object")
    return value


def _check_modelopt(path, quant):
    algo = str(quant.get("quant_algo", ""))
    if "NVFP4" not in algo.upper():
        raise CheckpointError(f"{path}: quant_algo = {algo!r}, not an NVFP4 checkpoint")
    group_size = quant.get("group_size", GROUP_SIZE)
    if group_size != GROUP_SIZE:
        raise CheckpointError(f"{path}: group_size = {group_size}, NVFP4 needs {GROUP_SIZE}")


def _check_compressed_tensors(path, quant):
    groups = _object(path, "quantization_config.config_groups", quant.get("config_groups"))
    for name, group in groups.items():
        group = _object(path, f"config_groups.{name}", group)
        weights = _object(path, f"config_groups.{name}.weights", group.get("weights"))
        if weights.get("num_bits") == 4 and weights.get("group_size", GROUP_SIZE) != GROUP_SIZE:
            raise CheckpointError(
                f"{path}: config_groups.{name}.weights.group_size = "
                f"{weights.get('group_size')}, NVFP4 needs {GROUP_SIZE}"
            )


def detect(directory, names):
    """(format, quantization config dict) for the checkpoint in `directory` with tensor `names`."""
    hf_quant = os.path.join(directory, "hf_quant_config.json")
    if os.path.exists(hf_quant):
        quant = _object(hf_quant, "quantization", _read_json(hf_quant).get("quantization"))
        _check_modelopt(hf_quant, quant)
        return MODELOPT, quant
    config_path = os.path.join(directory, "config.json")
    if os.path.exists(config_path):
        quant = _read_json(config_path).get("quantization_config")
        if quant is not None:
            quant = _object(config_path, "quantization_config", quant)
            method = quant.get("quant_method")
            if method == MODELOPT:
                _check_modelopt(config_path, quant)
                return MODELOPT, quant
            if method == COMPRESSED_TENSORS:
                _check_compressed_tensors(config_path, quant)
                return COMPRESSED_TENSORS, quant
            raise CheckpointError(
                f"{config_path}: quantization_config.quant_method = {method!r}, "
                f"expected {MODELOPT!r} or {COMPRESSED_TENSORS!r}"
            )
    if any(n.endswith(".weight_packed") for n in names):
        return COMPRESSED_TENSORS, {}
    if any(n.endswith("weight_scale_2") for n in names):
        return MODELOPT, {}
    raise CheckpointError(
        f"{directory}: no hf_quant_config.json, no quantization_config in "
        "config.json, and no NVFP4 tensor names: not an NVFP4 checkpoint"
    )
