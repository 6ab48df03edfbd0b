"""`python -m metrale quantize IN OUT` on a tiny bf16 MoE model written here, the output read back
with the safetensors library and with metrale.checkpoint, then a quantize -> load -> GEMM round
trip on the CPU backend."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest

import metrale
import modelopt_reference as ref
from conftest import bf16, read_safetensors, write_safetensors
from test_ops_cpu import expected_gemm

HIDDEN, INTER, EXPERTS = 64, 32, 3
PREFIX = "model.layers.0.mlp.experts"
FUSED = "model.layers.1.mlp.experts"  # gpt-oss's layout: [E, K, N] tensors, gate/up interleaved


def tiny_model(rng):
    t = {
        "model.embed_tokens.weight": bf16(rng.standard_normal((50, HIDDEN))),
        "model.layers.0.input_layernorm.weight": bf16(np.ones(HIDDEN)),
        "model.layers.0.self_attn.q_proj.weight": bf16(rng.standard_normal((HIDDEN, HIDDEN))),
        "model.layers.0.mlp.gate.weight": bf16(rng.standard_normal((EXPERTS, HIDDEN))),
        "lm_head.weight": bf16(rng.standard_normal((50, HIDDEN))),
        "model.layers.0.odd_proj.weight": bf16(rng.standard_normal((8, 24))),
    }  # K % 16 != 0
    t[f"{FUSED}.gate_up_proj"] = bf16(rng.standard_normal((EXPERTS, HIDDEN, 2 * INTER)))
    t[f"{FUSED}.gate_up_proj_bias"] = bf16(rng.standard_normal((EXPERTS, 2 * INTER)))
    t[f"{FUSED}.down_proj"] = bf16(rng.standard_normal((EXPERTS, INTER, HIDDEN)))
    for e in range(EXPERTS):
        for proj, shape in (
            ("gate_proj", (INTER, HIDDEN)),
            ("up_proj", (INTER, HIDDEN)),
            ("down_proj", (HIDDEN, INTER)),
        ):
            t[f"{PREFIX}.{e}.{proj}.weight"] = bf16(rng.standard_normal(shape) * (e + 1))
    return t


@pytest.fixture
def model_dir(tmp_path, rng):
    src = tmp_path / "bf16"
    src.mkdir()
    tensors = tiny_model(rng)
    names = sorted(tensors)
    shards = {
        "model-00001-of-00002.safetensors": names[::2],
        "model-00002-of-00002.safetensors": names[1::2],
    }
    for file_name, shard in shards.items():
        write_safetensors(src / file_name, {n: tensors[n] for n in shard})
    weight_map = {n: f for f, shard in shards.items() for n in shard}
    (src / "model.safetensors.index.json").write_text(json.dumps({"weight_map": weight_map}))
    (src / "config.json").write_text(json.dumps({"model_type": "tiny_moe"}))
    return src, tensors


def run_cli(*args):
    return subprocess.run(
        [sys.executable, "-m", "metrale", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_quantize_writes_a_modelopt_checkpoint(tmp_path, model_dir):
    src, tensors = model_dir
    out = tmp_path / "nvfp4"
    done = run_cli("quantize", src, out)
    assert done.returncode == 0, done.stderr
    assert f"{EXPERTS * 3 + 3} Linear weights in NVFP4" in done.stdout
    assert "[" in done.stderr and f"{len(tensors)}/{len(tensors)}" in done.stderr  # progress bar
    config = json.loads((out / "hf_quant_config.json").read_text())["quantization"]
    assert config["quant_algo"] == "NVFP4" and config["group_size"] == 16
    assert {"lm_head", "model.layers.0.mlp.gate", "model.layers.0.odd_proj"} <= set(
        config["exclude_modules"]
    )
    assert json.loads((out / "config.json").read_text()) == {"model_type": "tiny_moe"}
    written = {}
    for file_name in sorted(os.listdir(out)):
        if file_name.endswith(".safetensors"):
            written.update(read_safetensors(out / file_name))
    index = json.loads((out / "model.safetensors.index.json").read_text())["weight_map"]
    assert set(index) == set(written)
    for name, array in tensors.items():
        module = name.removesuffix(".weight")
        if name.startswith(FUSED) and not name.endswith("_bias"):
            check_fused(written, name, array)
        elif f"{module}.weight_scale" in written:
            packed, scale, scale_2 = ref.quantize(array)
            assert written[name] == ("U8", list(packed.shape), packed.tobytes())
            assert written[f"{module}.weight_scale"] == (
                "F8_E4M3",
                list(scale.shape),
                scale.tobytes(),
            )
            assert written[f"{module}.weight_scale_2"][2] == np.float32(scale_2).tobytes()
            assert written[f"{module}.input_scale"][0] == "F32"
        else:  # kept exactly as it was
            assert written[name] == ("BF16", list(array.shape), array.tobytes())


def check_fused(written, name, array):
    """ModelOpt quantizes the whole [E, N, K] tensor (one scale_2) and stores it transposed."""
    experts, k, n = array.shape
    packed, scale, scale_2 = ref.quantize(array.transpose(0, 2, 1).reshape(experts * n, k))
    want_packed = packed.reshape(experts, n, k // 2).transpose(0, 2, 1)
    want_scale = scale.reshape(experts, n, k // 16).transpose(0, 2, 1)
    assert written[name] == ("U8", [experts, k // 2, n], want_packed.tobytes())
    assert written[f"{name}_weight_scale"] == (
        "F8_E4M3",
        [experts, k // 16, n],
        want_scale.tobytes(),
    )
    assert written[f"{name}_weight_scale_2"][2] == np.float32(scale_2).tobytes()


def test_quantize_refuses_to_overwrite_without_force(tmp_path, model_dir):
    src, _ = model_dir
    out = tmp_path / "nvfp4"
    out.mkdir()
    (out / "keep.txt").write_text("mine")
    refused = run_cli("quantize", src, out, "--quiet")
    assert refused.returncode == 1 and "pass --force" in refused.stderr
    assert os.listdir(out) == ["keep.txt"]
    assert run_cli("quantize", src, out, "--force", "--quiet").returncode == 0
    assert (out / "hf_quant_config.json").exists()


def test_quantize_load_gemm_round_trip_on_the_cpu(tmp_path, model_dir, rng):
    src, tensors = model_dir
    out = tmp_path / "nvfp4"
    metrale.convert.convert(src, out, progress=False)
    ck = metrale.checkpoint.open(out)
    assert ck.format == "modelopt"
    act = bf16(rng.integers(-3, 4, (5, HIDDEN)))
    q = ck.nvfp4("model.layers.0.self_attn.q_proj")
    y = metrale.nvfp4_gemm(act, q.packed, q.scale, q.scale_2)
    np.testing.assert_array_equal(y.view(np.uint16), expected_gemm(act, *q).view(np.uint16))
    # and close to the bf16 weight it came from (NVFP4 keeps ~2 significant bits a value)
    original = (
        act.astype(np.float64)
        @ tensors["model.layers.0.self_attn.q_proj.weight"].astype(np.float64).T
    )
    assert np.abs(y.astype(np.float64) - original).max() < 0.5 * np.abs(original).max()
    tables = ck.moe_experts(PREFIX).to_device("cpu")
    offsets = np.array([0, 2, 2, 5], np.int32)
    c_gate, c_up = metrale.grouped_gate_up(act, tables["gate"], tables["up"], offsets)
    down_in = bf16(rng.integers(-2, 3, (5, INTER)))
    c = metrale.grouped_down(down_in, tables["down"], offsets)
    for e in range(EXPERTS):
        rows = slice(offsets[e], offsets[e + 1])
        gate = ck.nvfp4(f"{PREFIX}.{e}.gate_proj")
        down = ck.nvfp4(f"{PREFIX}.{e}.down_proj")
        np.testing.assert_array_equal(
            c_gate[rows].view(np.uint16), metrale.nvfp4_gemm(act[rows], *gate).view(np.uint16)
        )
        np.testing.assert_array_equal(
            c[rows].view(np.uint16), metrale.nvfp4_gemm(down_in[rows], *down).view(np.uint16)
        )
    assert c_up.shape == (5, INTER)
    fused = ck.moe_experts(FUSED, gate_up_order="interleaved")
    assert len(fused["gate"]) == EXPERTS and fused["down"][0].packed.shape == (HIDDEN, INTER // 2)
    gate_up = tensors[f"{FUSED}.gate_up_proj"][1].T  # expert 1 as [N, K]
    # The gate rows of expert 1, dequantized, are close to the bf16 ones they came from.
    gate = metrale.dequantize(*fused["gate"][1]).astype(np.float32)
    assert np.abs(gate - gate_up[0::2].astype(np.float32)).max() < 0.3 * np.abs(gate_up).max()


def one_file_model(tmp_path, rng):
    one = tmp_path / "one"
    one.mkdir()
    write_safetensors(one / "model.safetensors", tiny_model(rng))
    return one


def test_converting_in_place_is_refused_before_anything_is_written(tmp_path, rng):
    one = one_file_model(tmp_path, rng)
    before = (one / "model.safetensors").read_bytes()
    done = run_cli("quantize", one / "model.safetensors", one, "--force", "--quiet")
    assert done.returncode == 1, done.stderr
    assert "is the input file" in done.stderr and "model.safetensors" in done.stderr
    assert (one / "model.safetensors").read_bytes() == before
    assert sorted(os.listdir(one)) == ["model.safetensors"]
    # A hard link to the input in OUT is the same file too.
    out = tmp_path / "out"
    out.mkdir()
    os.link(one / "model.safetensors", out / "model.safetensors")
    with pytest.raises(metrale.checkpoint.CheckpointError, match="is the input file"):
        metrale.convert.convert(one / "model.safetensors", out, force=True, progress=False)
    assert (one / "model.safetensors").read_bytes() == before


def test_force_refuses_checkpoint_files_it_would_not_replace(tmp_path, model_dir, rng):
    src, _ = model_dir
    out = tmp_path / "nvfp4"
    metrale.convert.convert(src, out, progress=False)  # sharded: an index and two shards
    one = one_file_model(tmp_path, rng)
    with pytest.raises(
        metrale.checkpoint.CheckpointError,
        match=r"would not replace: \['model-00001-of-00002.safetensors', "
        r"'model-00002-of-00002.safetensors', 'model.safetensors.index.json'\]",
    ):
        metrale.convert.convert(one, out, force=True, progress=False)
    assert "model.safetensors" not in os.listdir(out)
    # The same conversion again replaces every file it wrote.
    metrale.convert.convert(src, out, force=True, progress=False)
    assert not [e for e in os.listdir(out) if e.startswith(".metrale")]


def test_a_failed_conversion_names_the_tensor_and_leaves_out_as_it_was(tmp_path, model_dir):
    src, _ = model_dir
    out = tmp_path / "nvfp4"
    # A Linear weight with an inf: the library refuses it (scale_2 would not be finite).
    bad = src / "model-00002-of-00002.safetensors"
    shard = metrale._safetensors.SafetensorsFile(bad)
    tensors = {name: np.array(shard.tensor(name)) for name in shard.entries}
    plan = metrale.convert.plan
    name = next(n for n in sorted(tensors) if plan(n, "BF16", tensors[n].shape) == "quantize")
    tensors[name][0, 0] = np.inf
    write_safetensors(bad, tensors)
    with pytest.raises(metrale.Error, match=rf"^converting {name} of .*00002-of-00002") as info:
        metrale.convert.convert(src, out, progress=False)
    assert isinstance(info.value.__cause__, metrale.InvalidArgumentError)  # the library's
    assert not out.exists()  # created by this run: removed
    out.mkdir()
    (out / "keep.txt").write_text("mine")
    done = run_cli("quantize", src, out, "--force")
    assert done.returncode == 1 and f"converting {name}" in done.stderr
    assert os.listdir(out) == ["keep.txt"]


def test_bad_devices_and_an_out_file_are_clear_errors(tmp_path, model_dir):
    src, _ = model_dir
    out = tmp_path / "nvfp4"
    done = run_cli("quantize", src, out, "--device", "bogus")
    assert done.returncode == 1 and "device = 'bogus', expected" in done.stderr, done.stderr
    assert "Traceback" not in done.stderr and not out.exists()
    try:
        import torch  # noqa: F401

        has_torch = True
    except ImportError:
        has_torch = False
    if not has_torch:
        done = run_cli("quantize", src, out, "--device", "cuda")
        assert done.returncode == 1 and "torch, which is not installed" in done.stderr
        assert not out.exists()
    out.write_text("a file")
    done = run_cli("quantize", src, out)
    assert done.returncode == 1 and "is not a directory" in done.stderr, done.stderr
