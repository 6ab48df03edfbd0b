"""metrale.checkpoint on checkpoints written here with the safetensors library: both formats, one
file and sharded directories, per-expert and fused 3-D experts, read back exactly; malformed
files refused with a message naming the file and the tensor."""

import json
import os

import numpy as np
import pytest

import metrale
from conftest import BF16, E4M3, write_safetensors


def nvfp4(rng, n, k, scale_2):
    packed = rng.integers(0, 256, (n, k // 2), dtype=np.uint8)
    scale = rng.integers(0x20, 0x50, (n, k // 16), dtype=np.uint8).view(E4M3)
    return packed, scale, np.float32(scale_2)


def modelopt_tensors(name, w, scale_2_dtype=np.float32):
    packed, scale, scale_2 = w
    return {
        f"{name}.weight": packed,
        f"{name}.weight_scale": scale,
        f"{name}.weight_scale_2": np.array(scale_2, dtype=scale_2_dtype),
    }


def compressed_tensors(name, w):
    packed, scale, scale_2 = w
    return {
        f"{name}.weight_packed": packed,
        f"{name}.weight_scale": scale,
        f"{name}.weight_global_scale": np.array([1.0 / scale_2], dtype=np.float32),
    }


def write_config(directory, fmt):
    if fmt == "modelopt":
        config = {
            "quantization": {
                "quant_algo": "NVFP4",
                "group_size": 16,
                "exclude_modules": ["lm_head"],
            }
        }
        with open(os.path.join(directory, "hf_quant_config.json"), "w") as f:
            json.dump(config, f)
    else:
        config = {
            "quantization_config": {
                "quant_method": "compressed-tensors",
                "format": "nvfp4-pack-quantized",
                "config_groups": {
                    "group_0": {"weights": {"num_bits": 4, "type": "float", "group_size": 16}}
                },
            }
        }
        with open(os.path.join(directory, "config.json"), "w") as f:
            json.dump(config, f)


def assert_weight(got, want):
    np.testing.assert_array_equal(got.packed, want[0])
    np.testing.assert_array_equal(got.scale.view(np.uint8), want[1].view(np.uint8))
    assert got.scale.dtype == E4M3 and got.packed.dtype == np.uint8


@pytest.mark.parametrize("fmt", ["modelopt", "compressed-tensors"])
def test_single_file_reads_back_exactly(tmp_path, rng, fmt):
    w = nvfp4(rng, 32, 64, 0.0123)
    tensors = (modelopt_tensors if fmt == "modelopt" else compressed_tensors)("layers.0.q_proj", w)
    tensors["embed.weight"] = np.ones((4, 8), BF16)
    write_safetensors(tmp_path / "model.safetensors", tensors)
    write_config(tmp_path, fmt)
    ck = metrale.checkpoint.open(tmp_path / "model.safetensors")
    assert ck.format == fmt
    got = ck.nvfp4("layers.0.q_proj")
    assert_weight(got, w)
    if fmt == "modelopt":
        assert got.scale_2 == float(np.float32(0.0123))
    else:  # the stored reciprocal, inverted in fp32
        assert got.scale_2 == float(np.float32(1.0) / np.float32(1.0 / np.float32(0.0123)))
    np.testing.assert_array_equal(ck.tensor("embed.weight").astype(np.float32), 1.0)


def test_bf16_scale_2_is_upcast(tmp_path, rng):
    w = nvfp4(rng, 16, 32, 0.5)
    write_safetensors(tmp_path / "m.safetensors", modelopt_tensors("p", w, BF16))
    assert metrale.checkpoint.open(tmp_path / "m.safetensors").nvfp4("p").scale_2 == 0.5


@pytest.mark.parametrize("fmt", ["modelopt", "compressed-tensors"])
def test_sharded_per_expert_moe(tmp_path, rng, fmt):
    make = modelopt_tensors if fmt == "modelopt" else compressed_tensors
    prefix = "model.layers.3.mlp.experts"
    weights = {
        (e, p): nvfp4(
            rng, 32 if p != "down_proj" else 64, 64 if p != "down_proj" else 32, 0.01 * (e + 1)
        )
        for e in range(3)
        for p in ("gate_proj", "up_proj", "down_proj")
    }
    shards, weight_map = [{}, {}], {}
    for (e, p), w in weights.items():
        for name, t in make(f"{prefix}.{e}.{p}", w).items():
            shards[e % 2][name] = t
            weight_map[name] = f"model-0000{e % 2 + 1}-of-00002.safetensors"
    for i, shard in enumerate(shards):
        write_safetensors(tmp_path / f"model-0000{i + 1}-of-00002.safetensors", shard)
    with open(tmp_path / "model.safetensors.index.json", "w") as f:
        json.dump({"metadata": {}, "weight_map": weight_map}, f)
    write_config(tmp_path, fmt)
    experts = metrale.checkpoint.open(tmp_path).moe_experts(prefix)
    assert sorted(experts) == ["down", "gate", "up"] and len(experts["gate"]) == 3
    for e in range(3):
        for key, p in (("gate", "gate_proj"), ("up", "up_proj"), ("down", "down_proj")):
            assert_weight(experts[key][e], weights[(e, p)])
    tables = experts.to_device("cpu")
    assert tables["down"].num_experts == 3 and (tables["down"].n, tables["down"].k) == (64, 32)


def test_a_missing_expert_is_an_error(tmp_path, rng):
    tensors = {}
    for e in (0, 1, 3):
        for p in ("gate_proj", "up_proj", "down_proj"):
            tensors.update(modelopt_tensors(f"experts.{e}.{p}", nvfp4(rng, 32, 32, 0.5)))
    write_safetensors(tmp_path / "m.safetensors", tensors)
    with pytest.raises(metrale.checkpoint.CheckpointError, match=r"run to 3 but \[2\] are missing"):
        metrale.checkpoint.open(tmp_path / "m.safetensors").moe_experts("experts")


@pytest.mark.parametrize("order", ["chunked", "interleaved"])
def test_fused_3d_experts_stored_transposed(tmp_path, rng, order):
    experts, n, k = 2, 16, 64
    gate_up = rng.integers(0, 256, (experts, 2 * n, k // 2), dtype=np.uint8)
    gate_up_scale = rng.integers(0x20, 0x50, (experts, 2 * n, k // 16), dtype=np.uint8)
    down = rng.integers(0, 256, (experts, k, n // 2), dtype=np.uint8)
    down_scale = rng.integers(0x20, 0x50, (experts, k, n // 16), dtype=np.uint8)
    prefix = "model.layers.0.feed_forward.experts"
    write_safetensors(
        tmp_path / "model.safetensors",
        {
            f"{prefix}.gate_up_proj": gate_up.transpose(0, 2, 1),
            f"{prefix}.gate_up_proj_weight_scale": gate_up_scale.transpose(0, 2, 1).view(E4M3),
            f"{prefix}.gate_up_proj_weight_scale_2": np.array(0.25, np.float32),
            f"{prefix}.down_proj": down.transpose(0, 2, 1),
            f"{prefix}.down_proj_weight_scale": down_scale.transpose(0, 2, 1).view(E4M3),
            f"{prefix}.down_proj_weight_scale_2": np.array([0.5, 0.75], np.float32),
        },
    )
    write_config(tmp_path, "modelopt")
    got = metrale.checkpoint.open(tmp_path).moe_experts(prefix, gate_up_order=order)
    gate_rows, up_rows = (
        (slice(0, n), slice(n, None))
        if order == "chunked"
        else (slice(0, None, 2), slice(1, None, 2))
    )
    for e in range(experts):
        assert_weight(
            got["gate"][e], (gate_up[e][gate_rows], gate_up_scale[e][gate_rows].view(E4M3))
        )
        assert_weight(got["up"][e], (gate_up[e][up_rows], gate_up_scale[e][up_rows].view(E4M3)))
        assert_weight(got["down"][e], (down[e], down_scale[e].view(E4M3)))
        assert got["gate"][e].scale_2 == 0.25
    assert [w.scale_2 for w in got["down"]] == [0.5, 0.75]


def _write_one(tmp_path, rng, **changes):
    tensors = modelopt_tensors("p", nvfp4(rng, 16, 32, 0.5))
    tensors.update(changes)
    write_safetensors(tmp_path / "m.safetensors", tensors)
    return tmp_path / "m.safetensors"


@pytest.mark.parametrize(
    "changes, message",
    [
        (
            {"p.weight_scale_2": np.array(0.0, np.float32)},
            r"scale_2 = \[0.0\] is not finite and > 0",
        ),
        ({"p.weight_scale_2": np.array(np.inf, np.float32)}, "is not finite"),
        ({"p.weight_scale_2": np.array(np.nan, np.float32)}, "is not finite"),
        (
            {"p.weight_scale": np.full((16, 2), 0x7F, np.uint8).view(E4M3)},
            r"32 NaN e4m3 bytes.*\[0, 0\]",
        ),
        ({"p.weight_scale": np.full((16, 3), 0x38, np.uint8).view(E4M3)}, r"expected \[16, 2\]"),
        ({"p.weight": np.zeros((16, 16), np.float32)}, "expected uint8"),
        ({"p.weight": np.zeros((16, 12), np.uint8)}, "K = 24 is not a positive multiple of 16"),
    ],
)
def test_malformed_weights_are_refused(tmp_path, rng, changes, message):
    path = _write_one(tmp_path, rng, **changes)
    with pytest.raises(metrale.checkpoint.CheckpointError, match=message) as info:
        metrale.checkpoint.open(path).nvfp4("p")
    assert str(path) in str(info.value) and "tensor 'p." in str(info.value)
    assert isinstance(info.value, ValueError)


def test_truncated_file_is_refused_naming_the_tensor(tmp_path, rng):
    path = _write_one(tmp_path, rng)
    data = path.read_bytes()
    path.write_bytes(data[:-3])
    with pytest.raises(metrale.Error, match=rf"{path}: tensor 'p\.[a-z_2]+'.*truncated"):
        metrale.checkpoint.open(path)


def test_header_that_lies_about_offsets_is_refused(tmp_path, rng):
    path = _write_one(tmp_path, rng)
    data = bytearray(path.read_bytes())
    header_len = int.from_bytes(data[:8], "little")
    header = json.loads(data[8 : 8 + header_len])
    header["p.weight"]["data_offsets"][1] -= 8
    encoded = json.dumps(header, separators=(",", ":")).encode().ljust(header_len)
    assert len(encoded) == header_len
    path.write_bytes(bytes(data[:8]) + encoded + bytes(data[8 + header_len :]))
    with pytest.raises(metrale.Error, match=r"tensor 'p.weight': data_offsets .* hold 248 bytes"):
        metrale.checkpoint.open(path)


def test_not_a_checkpoint(tmp_path):
    (tmp_path / "x.safetensors").write_bytes(b"\x05\x00")
    with pytest.raises(metrale.Error, match="too short"):
        metrale.checkpoint.open(tmp_path / "x.safetensors")
    with pytest.raises(metrale.Error, match="no such file"):
        metrale.checkpoint.open(tmp_path / "absent")


def test_index_naming_a_missing_shard(tmp_path, rng):
    _write_one(tmp_path, rng)
    with open(tmp_path / "model.safetensors.index.json", "w") as f:
        json.dump({"weight_map": {"p.weight": "m.safetensors", "q.weight": "gone.safetensors"}}, f)
    with pytest.raises(metrale.Error, match="'q.weight' is in gone.safetensors, which does not"):
        metrale.checkpoint.open(tmp_path)


def test_wrong_group_size_in_config(tmp_path, rng):
    _write_one(tmp_path, rng)
    with open(tmp_path / "hf_quant_config.json", "w") as f:
        json.dump({"quantization": {"quant_algo": "NVFP4", "group_size": 32}}, f)
    with pytest.raises(metrale.Error, match="group_size = 32"):
        metrale.checkpoint.open(tmp_path)


def write_raw(path, header, data=b""):
    """A safetensors file with `header` (an object to encode, or the bytes themselves)."""
    encoded = header if isinstance(header, bytes) else json.dumps(header).encode()
    path.write_bytes(len(encoded).to_bytes(8, "little") + encoded + data)
    return path


@pytest.mark.parametrize(
    "header, message",
    [
        ({"t": {"dtype": ["F32"], "shape": [1], "data_offsets": [0, 4]}}, r"dtype \['F32'\]"),
        ({"t": {"dtype": "F32", "shape": [10**20, 0], "data_offsets": [0, 0]}}, "too large"),
        ({"t": {"dtype": "F32", "shape": [True], "data_offsets": [0, 4]}}, "non-negative int"),
        ({"t": ["F32"]}, "is not an object with dtype"),
        (b"[" * 100000 + b"]" * 100000, "RecursionError"),
        (b'{"t": "\xff"}', "not valid JSON"),
    ],
)
def test_malformed_headers_are_refused(tmp_path, header, message):
    path = write_raw(tmp_path / "m.safetensors", header, b"\0" * 4)
    with pytest.raises(metrale.checkpoint.CheckpointError, match=message) as info:
        metrale.checkpoint.open(path)
    assert str(path) in str(info.value)


def test_a_directory_named_like_a_shard_is_refused(tmp_path, rng):
    _write_one(tmp_path, rng)
    (tmp_path / "dir.safetensors").mkdir()
    with pytest.raises(metrale.checkpoint.CheckpointError, match="dir.safetensors: is a direct"):
        metrale.checkpoint.open(tmp_path)
    with pytest.raises(metrale.checkpoint.CheckpointError, match="is a directory"):
        metrale._safetensors.SafetensorsFile(tmp_path / "dir.safetensors")


@pytest.mark.parametrize(
    "file_name, content, message",
    [
        ("hf_quant_config.json", [1], r"hf_quant_config.json: the file is a JSON array"),
        ("hf_quant_config.json", {"quantization": []}, r"quantization is a JSON array"),
        ("config.json", {"quantization_config": "nvfp4"}, r"quantization_config is a JSON str"),
        (
            "config.json",
            {"quantization_config": {"quant_method": "compressed-tensors", "config_groups": []}},
            r"config_groups is a JSON array",
        ),
        (
            "config.json",
            {
                "quantization_config": {
                    "quant_method": "compressed-tensors",
                    "config_groups": {"g": {"weights": 4}},
                }
            },
            r"config_groups.g.weights is a JSON number",
        ),
        ("model.safetensors.index.json", [], r"the file is a JSON array"),
        ("model.safetensors.index.json", {"weight_map": []}, r"weight_map is a JSON array"),
        ("model.safetensors.index.json", {"weight_map": {"p.weight": 3}}, r"is in 3, expected"),
        (
            "model.safetensors.index.json",
            {"weight_map": {"p.weight": "../m.safetensors"}},
            r"'\.\./m\.safetensors', outside the model directory",
        ),
        (
            "model.safetensors.index.json",
            {"weight_map": {"p.weight": "/etc/m.safetensors"}},
            r"outside the model directory",
        ),
        ("model.safetensors.index.json", b"\xff\xfe{}", r"cannot be read \(UnicodeDecodeError"),
        ("hf_quant_config.json", b"\xff\xfe{}", r"cannot be read as JSON \(UnicodeDecodeError"),
    ],
)
def test_malformed_json_files_are_refused(tmp_path, rng, file_name, content, message):
    _write_one(tmp_path, rng)
    data = content if isinstance(content, bytes) else json.dumps(content).encode()
    (tmp_path / file_name).write_bytes(data)
    with pytest.raises(metrale.checkpoint.CheckpointError, match=message) as info:
        metrale.checkpoint.open(tmp_path)
    assert file_name in str(info.value)


def test_fused_experts_with_no_experts_are_refused(tmp_path):
    name = "x.experts.gate_up_proj"
    tensors = {
        name: np.zeros((0, 16, 64), np.uint8),
        f"{name}_weight_scale": np.zeros((0, 2, 64), E4M3),
        f"{name}_weight_scale_2": np.array(0.5, np.float32),
    }
    write_safetensors(tmp_path / "m.safetensors", tensors)
    with pytest.raises(metrale.checkpoint.CheckpointError, match=r"\[0, 16, 64\].*with E >= 1"):
        metrale.checkpoint.open(tmp_path).moe_experts("x.experts")
