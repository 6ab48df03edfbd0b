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
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, json.JSONDecodeError) as e:
        raise CheckpointError(f"{path}: cannot be read as JSON ({e})") from None


def _check_modelopt(path, quant):
    algo = str(quant.get("quant_algo", ""))
    if "NVFP4" not in algo.upper():
        raise CheckpointError(f"{path}: quant_algo = {algo!r}, not an NVFP4 checkpoint")
    group_size = quant.get("group_size", GROUP_SIZE)
    if group_size != GROUP_SIZE:
        raise CheckpointError(f"{path}: group_size = {group_size}, NVFP4 needs {GROUP_SIZE}")


def _check_compressed_tensors(path, quant):
    for name, group in (quant.get("config_groups") or {}).items():
        weights = (group or {}).get("weights") or {}
        if weights.get("num_bits") == 4 and weights.get("group_size", GROUP_SIZE) != GROUP_SIZE:
            raise CheckpointError(
                f"{path}: config_groups.{name}.weights.group_size = "
                f"{weights.get('group_size')}, NVFP4 needs {GROUP_SIZE}"
            )


def detect(directory, names):
    """(format, quantization config dict) for the checkpoint in `directory` with tensor `names`."""
    hf_quant = os.path.join(directory, "hf_quant_config.json")
    if os.path.exists(hf_quant):
        quant = _read_json(hf_quant).get("quantization") or {}
        _check_modelopt(hf_quant, quant)
        return MODELOPT, quant
    config_path = os.path.join(directory, "config.json")
    if os.path.exists(config_path):
        quant = _read_json(config_path).get("quantization_config")
        if quant is not None:
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
