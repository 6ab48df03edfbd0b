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
    with pytest.raises(metrale.InvalidArgumentError, match="act has dtype"):
        metrale.gemm(np.zeros((2, 32), np.float32), np.zeros((4, 32), BF16))
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
