"""The operations on the CPU backend (host NumPy arrays) against NumPy: exact mode (weights on the
NVFP4 grid, small-integer activations: bit for bit), every scale layout, the SFB swizzle against
NVFP4.md's formula, the grouped operations against per-expert GEMMs, errors and the GIL."""

import threading
import time

import ml_dtypes
import numpy as np
import pytest

import metrale
from conftest import BF16, E4M3, bf16


def nvfp4_weight(rng, n, k, scale_2=0.5):
    """Random codes, power-of-two block scales in [2^-3, 2^3]: every product is exact."""
    packed = rng.integers(0, 256, (n, k // 2), dtype=np.uint8)
    scale = (np.float32(2.0) ** rng.integers(-3, 4, (n, k // 16))).astype(E4M3)
    return packed, scale, scale_2


def decoded(packed, scale):
    """fp64 [N, K] = e2m1 * e4m3 (no scale_2), from ml_dtypes."""
    codes = np.stack([packed & 0xF, packed >> 4], -1).reshape(packed.shape[0], -1).astype(np.uint8)
    e2m1 = codes.view(ml_dtypes.float4_e2m1fn).astype(np.float64)
    sf = scale.astype(np.float64)
    return (e2m1.reshape(packed.shape[0], -1, 16) * sf[..., None]).reshape(e2m1.shape)


def expected_gemm(act, packed, scale, scale_2):
    acc = (act.astype(np.float64) @ decoded(packed, scale).T).astype(np.float32)
    return (acc * np.float32(scale_2)).astype(BF16)


def small_ints(rng, m, k):
    return bf16(rng.integers(-4, 5, (m, k)))


def assert_bits_equal(got, want):
    np.testing.assert_array_equal(np.asarray(got).view(np.uint16), np.asarray(want).view(np.uint16))


def sfb_reference(scale):
    """NVFP4.md section 6, element by element: [N, K/16] -> the 128x4 swizzle, zero padded."""
    n, cols = scale.shape
    k_tiles = -(-cols * 16 // 64)
    out = np.zeros(-(-n // 128) * 128 * k_tiles * 4, np.uint8)
    for row in range(n):
        for b in range(cols):
            offset = (
                (row // 128) * k_tiles * 512
                + (b // 4) * 512
                + (row % 32) * 16
                + ((row // 32) % 4) * 4
                + b % 4
            )
            out[offset] = scale.view(np.uint8)[row, b]
    return out


@pytest.mark.parametrize("m, n, k", [(1, 16, 16), (3, 130, 64), (17, 256, 272)])
def test_gemm_exact(rng, m, n, k):
    act, weight = small_ints(rng, m, k), small_ints(rng, n, k)
    want = (act.astype(np.float64) @ weight.astype(np.float64).T).astype(np.float32).astype(BF16)
    assert_bits_equal(metrale.gemm(act, weight), want)


@pytest.mark.parametrize("layout", ["n_by_k16", "k16_by_n", "sfb"])
@pytest.mark.parametrize("m, n, k", [(1, 16, 16), (5, 129, 80), (33, 64, 512)])
def test_nvfp4_gemm_exact_in_every_scale_layout(rng, layout, m, n, k):
    packed, scale, scale_2 = nvfp4_weight(rng, n, k)
    act = small_ints(rng, m, k)
    given = {
        "n_by_k16": scale,
        "k16_by_n": np.ascontiguousarray(scale.T),
        "sfb": metrale.swizzle_sfb(scale),
    }[layout]
    got = metrale.nvfp4_gemm(act, packed, given, scale_2, scale_layout=layout)
    assert_bits_equal(got, expected_gemm(act, packed, scale, scale_2))


@pytest.mark.parametrize("n, k", [(1, 16), (33, 48), (128, 64), (200, 208)])
def test_swizzle_sfb_matches_the_formula(rng, n, k):
    scale = rng.integers(1, 0x7F, (n, k // 16), dtype=np.uint8).view(E4M3)
    np.testing.assert_array_equal(metrale.swizzle_sfb(scale).view(np.uint8), sfb_reference(scale))
    from_kn = metrale.swizzle_sfb(np.ascontiguousarray(scale.T), src_layout="k16_by_n")
    np.testing.assert_array_equal(from_kn.view(np.uint8), sfb_reference(scale))


def make_experts(rng, experts, n, k, layout):
    weights = [nvfp4_weight(rng, n, k, scale_2=0.25 * (e + 1)) for e in range(experts)]
    return weights, metrale.expert_table(weights, layout=layout)


@pytest.mark.parametrize("layout", ["sfb", "k16_by_n"])
def test_grouped_gate_up_equals_per_expert_gemms(rng, layout):
    offsets = np.array([0, 3, 3, 10, 11], np.int32)  # expert 1 has no rows
    gate_w, gate = make_experts(rng, 4, 48, 64, layout)
    up_w, up = make_experts(rng, 4, 48, 64, layout)
    a = small_ints(rng, 11, 64)
    c_gate, c_up = metrale.grouped_gate_up(a, gate, up, offsets)
    for e in range(4):
        rows = slice(offsets[e], offsets[e + 1])
        assert_bits_equal(c_gate[rows], expected_gemm(a[rows], *gate_w[e]))
        assert_bits_equal(c_up[rows], expected_gemm(a[rows], *up_w[e]))


def test_grouped_gate_up_fused_gathers_rows(rng):
    offsets = [0, 2, 6]
    gate_w, gate = make_experts(rng, 2, 32, 128, "sfb")
    up_w, up = make_experts(rng, 2, 32, 128, "sfb")
    tokens = small_ints(rng, 4, 128)
    ids = np.array([3, 0, 1, 1, 2, 3], np.int32)
    c_gate, c_up = metrale.grouped_gate_up_fused(tokens, ids, gate, up, offsets)
    for e in range(2):
        rows = slice(offsets[e], offsets[e + 1])
        assert_bits_equal(c_gate[rows], expected_gemm(tokens[ids[rows]], *gate_w[e]))
        assert_bits_equal(c_up[rows], expected_gemm(tokens[ids[rows]], *up_w[e]))


def test_grouped_down_writes_out(rng):
    offsets = np.array([0, 0, 5], np.int32)
    down_w, down = make_experts(rng, 2, 64, 32, "sfb")
    a = small_ints(rng, 5, 32)
    out = np.full((5, 64), np.nan, BF16)
    assert metrale.grouped_down(a, down, offsets, out=out) is out
    assert_bits_equal(out, expected_gemm(a, *down_w[1]))


def test_library_messages_reach_python(rng):
    _, down = make_experts(rng, 2, 64, 32, "sfb")
    a = small_ints(rng, 5, 32)
    with pytest.raises(
        metrale.InvalidArgumentError,
        match=r"^nvfp4_grouped_down: expert_offsets\[2\] = 2 < expert_offsets\[1\] = 5",
    ):
        metrale.grouped_down(a, down, np.array([0, 5, 2], np.int32), m_total=5)
    packed, scale, _ = nvfp4_weight(rng, 16, 32)
    with pytest.raises(metrale.InvalidArgumentError, match="scale_2 = nan"):
        metrale.nvfp4_gemm(small_ints(rng, 2, 32), packed, scale, float("nan"))
    with pytest.raises(metrale.InvalidArgumentError, match="act has dtype float32, expected bf"):
        metrale.gemm(np.zeros((2, 32), np.float32), np.zeros((4, 32), BF16))
    with pytest.raises(metrale.InvalidArgumentError, match="weight has dtype bool, expected bf"):
        metrale.gemm(np.zeros((2, 32), BF16), np.zeros((4, 32), bool))
    with pytest.raises(metrale.InvalidArgumentError, match="gate is a"):
        metrale.grouped_gate_up(a, [packed], down, [0, 5])


def test_backend_names_are_checked():
    with pytest.raises(metrale.InvalidArgumentError, match="backend = 'gpu'"):
        metrale.gemm(np.zeros((1, 16), BF16), np.zeros((1, 16), BF16), backend="gpu")
    assert metrale.backends()["cpu"] == "built"


def test_the_gil_is_released_during_a_call(rng):
    # Long enough to tell on a fast many-core host too (a 16-core machine ran 256 rows in 41 ms):
    # the rows grow until one call takes a quarter of a second.
    rows, weight = 256, small_ints(rng, 512, 2048)
    while True:
        act = small_ints(rng, rows, 2048)
        start = time.perf_counter()
        metrale.gemm(act, weight)
        if time.perf_counter() - start > 0.25 or rows >= 1 << 16:
            break
        rows *= 2
    window = []

    def call():
        window.append(time.perf_counter())
        metrale.gemm(act, weight)
        window.append(time.perf_counter())

    worker = threading.Thread(target=call)
    stamps = []
    worker.start()
    while worker.is_alive():
        stamps.append(time.perf_counter())
    worker.join()
    begin, end = window
    margin = 0.02  # a thread holding the GIL can let the other run one switch interval (5 ms)
    inside = sum(begin + margin < t < end - margin for t in stamps)
    assert end - begin > 3 * margin, f"the call took {end - begin:.3f} s: too short to tell"
    # Holding the GIL for the whole call would leave this thread no step inside the window.
    assert inside > 100, f"{inside} steps of this thread during a {end - begin:.3f} s call"


def read_only(array):
    array = array.copy()
    array.flags.writeable = False
    return array


def test_read_only_outputs_are_refused_and_left_unchanged(rng, tmp_path):
    from conftest import write_safetensors

    packed, scale, _ = nvfp4_weight(rng, 16, 64)
    act = small_ints(rng, 3, 64)
    refused = metrale.InvalidArgumentError
    out = read_only(np.zeros((16, 32), np.uint8))
    with pytest.raises(refused, match=r"^metrale\.prepack: out is read-only"):
        metrale.prepack(packed, out=out)
    assert not out.any()
    gemm_out = read_only(np.zeros((3, 16), BF16))
    with pytest.raises(refused, match=r"^metrale\.gemm: out is read-only"):
        metrale.gemm(act, small_ints(rng, 16, 64), out=gemm_out)
    with pytest.raises(refused, match=r"^metrale\.nvfp4_gemm: out is read-only"):
        metrale.nvfp4_gemm(act, packed, scale, 0.5, out=gemm_out)
    with pytest.raises(refused, match=r"^metrale\.swizzle_sfb: out is read-only"):
        metrale.swizzle_sfb(scale, out=read_only(np.zeros(metrale.swizzle_sfb(scale).shape, E4M3)))
    w = small_ints(rng, 16, 64)
    with pytest.raises(refused, match=r"^metrale\.quantize: out\[0\] is read-only"):
        metrale.quantize(w, out=(read_only(np.zeros((16, 32), np.uint8)), scale.copy()))
    with pytest.raises(refused, match=r"^metrale\.quantize: out\[1\] is read-only"):
        metrale.quantize(w, out=(np.zeros((16, 32), np.uint8), read_only(scale)))
    _, down = make_experts(rng, 2, 16, 64, "sfb")
    grouped_out = read_only(np.zeros((3, 16), BF16))
    with pytest.raises(refused, match=r"^metrale\.grouped_down: out\[0\] is read-only"):
        metrale.grouped_down(act, down, [0, 1, 3], out=grouped_out)
    assert not grouped_out.astype(np.float32).any()
    with pytest.raises(refused, match=r"^metrale\.prepack: out is a list, not an array"):
        metrale.prepack(packed, out=[0] * 32)
    # A checkpoint's tensors are read-only memory maps: prepacking one in place used to segfault.
    write_safetensors(
        tmp_path / "model.safetensors",
        {"x.weight": packed, "x.weight_scale": scale, "x.weight_scale_2": np.float32(0.5)},
    )
    mapped = metrale.checkpoint.open(tmp_path / "model.safetensors").nvfp4("x")
    with pytest.raises(refused, match=r"^metrale\.prepack: out is read-only"):
        metrale.prepack(mapped.packed, out=mapped.packed)
    np.testing.assert_array_equal(mapped.packed, packed)
    assert metrale.prepack(mapped.packed).flags.writeable  # a read-only input is fine


def test_quantize_checks_both_outputs_before_writing_either(rng):
    w = small_ints(rng, 16, 64)
    want_packed, want_scale, _ = metrale.quantize(w)
    packed = np.zeros((16, 32), np.uint8)
    with pytest.raises(metrale.InvalidArgumentError, match=r"out\[1\] has shape \[4, 16\]"):
        metrale.quantize(w, out=(packed, np.zeros((4, 16), E4M3)))
    assert not packed.any()
    with pytest.raises(metrale.InvalidArgumentError, match=r"out\[1\] has dtype float32"):
        metrale.quantize(w, out=(packed, np.zeros((16, 4), np.float32)))
    with pytest.raises(metrale.InvalidArgumentError, match=r"out is a ndarray, expected"):
        metrale.quantize(w, out=packed)
    assert not packed.any()
    # A uint8 scale buffer takes the e4m3 bytes (not the values converted to integers).
    scale_bytes = np.zeros((16, 4), np.uint8)
    got = metrale.quantize(w, out=(packed, scale_bytes))
    assert got[1] is scale_bytes
    np.testing.assert_array_equal(scale_bytes, want_scale.view(np.uint8))
    np.testing.assert_array_equal(packed, want_packed)


def test_expert_table_checks_the_packed_and_scale_arrays(rng):
    packed, scale, s2 = nvfp4_weight(rng, 16, 64)
    wide = np.zeros((16, 64), np.uint8)
    wide[:, :32] = packed
    with pytest.raises(metrale.InvalidArgumentError, match=r"expert 1's packed .* not C-contig"):
        metrale.expert_table([(packed, scale, s2), (wide[:, :32], scale, s2)])
    with pytest.raises(metrale.InvalidArgumentError, match=r"expert 0's packed has dtype int16"):
        metrale.expert_table([(packed.astype(np.int16), scale, s2)])
    with pytest.raises(metrale.InvalidArgumentError, match=r"expert 0's scale has dtype float32"):
        metrale.expert_table([(packed, scale.astype(np.float32), s2)], layout="k16_by_n")
    with pytest.raises(metrale.InvalidArgumentError, match=r"expert 0's scale has shape \[16, 2\]"):
        metrale.expert_table([(packed, scale[:, :2], s2)], layout="k16_by_n")
    with pytest.raises(metrale.InvalidArgumentError, match=r"expert 0's packed is a list"):
        metrale.expert_table([(packed.tolist(), scale, s2)])


def test_int32_arguments_are_range_checked_not_wrapped(rng):
    _, down = make_experts(rng, 2, 16, 64, "sfb")
    a = small_ints(rng, 6, 64)
    with pytest.raises(
        metrale.InvalidArgumentError, match=r"expert_offsets\[2\] = 4294967302 is outside int32"
    ):
        metrale.grouped_down(a, down, np.array([0, 3, 2**32 + 6]))
    with pytest.raises(metrale.InvalidArgumentError, match=r"expert_offsets\[1\] = -4294967293"):
        metrale.grouped_down(a, down, [0, -(2**32) + 3, 6])
    with pytest.raises(metrale.InvalidArgumentError, match=r"m_total = 4294967302 is outside"):
        metrale.grouped_down(a, down, [0, 3, 6], m_total=2**32 + 6)
    with pytest.raises(metrale.InvalidArgumentError, match=r"expert_offsets has dtype float64"):
        metrale.grouped_down(a, down, [0, 3.0, 6])
    with pytest.raises(metrale.InvalidArgumentError, match=r"swizzle_sfb: n = 4294967312"):
        metrale.swizzle_sfb(np.zeros((16, 4), E4M3), n=2**32 + 16)


def test_dequantize_and_stream_arguments_are_checked(rng):
    packed, scale, _ = nvfp4_weight(rng, 16, 64)
    refused = metrale.InvalidArgumentError
    with pytest.raises(refused, match=r"^metrale\.dequantize: scale has shape \[16, 2\]"):
        metrale.dequantize(packed, scale[:, :2], 0.5)
    with pytest.raises(refused, match=r"^metrale\.dequantize: packed has dtype float32"):
        metrale.dequantize(packed.astype(np.float32), scale, 0.5)
    with pytest.raises(refused, match=r"^metrale\.dequantize: packed has K/2 = 12"):
        metrale.dequantize(packed[:, :12], scale, 0.5)
    with pytest.raises(refused, match=r"^metrale\.dequantize: scale_2 = 'x' is not a number"):
        metrale.dequantize(packed, scale, "x")
    with pytest.raises(refused, match=r"stream = 'abc' is not a cudaStream_t"):
        metrale.prepack(packed, stream="abc")
    with pytest.raises(refused, match=r"stream = -1 is not a cudaStream_t"):
        metrale.prepack(packed, stream=-1)
