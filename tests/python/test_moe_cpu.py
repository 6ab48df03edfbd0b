"""metrale.moe_forward on the CPU backend (the library's oracle) against a small NumPy reference
written here from docs/api.md's formulas: softmax top-k routing and precomputed ids, the gate/up
GEMMs, silu(g) · u, down, and the fp32 combine in slot order, each rounding point as documented.

Weights are on the NVFP4 grid and activations small integers, so gate and up are exact (bit for
bit). The routing weights and the activation go through exp, whose last fp32 bit may differ
between the C library and NumPy, and the down GEMM's fp32 sums run in another order here (fp64,
rounded once): those outputs must agree to a bf16 rounding, and almost all of them bit for bit."""

import numpy as np
import pytest

import metrale
from conftest import BF16
from test_ops_cpu import assert_bits_equal, expected_gemm, make_experts, small_ints

H, I = 64, 32  # hidden and intermediate sizes


def softmax_topk_reference(logits, k, renormalize):
    """(ids, weights) [T, k]: the k largest logits (a tie to the lower id), softmax weights over
    all E in fp32 (the sum in docs/api.md's order), optionally divided by their sum (slot order)."""
    ids = np.argsort(-logits, axis=1, kind="stable")[:, :k].astype(np.int32)
    weights = np.zeros(ids.shape, np.float32)
    for t, row in enumerate(logits.astype(np.float32)):
        p = np.exp(row - row.max())
        lanes = np.zeros(32, np.float32)  # docs/api.md's order: 32 strided sums, then a tree
        for e, v in enumerate(p):
            lanes[e % 32] = np.float32(lanes[e % 32] + v)
        half = 16
        while half > 0:
            lanes[:half] = lanes[:half] + lanes[half : 2 * half]
            half //= 2
        total = lanes[0]
        weights[t] = p[ids[t]] / total
        if renormalize:
            s = np.float32(0)
            for v in weights[t]:
                s = np.float32(s + v)
            weights[t] /= s
    return ids, weights


def layer_reference(hidden, experts, ids, weights):
    """out [T, H] bf16 = bf16(Σ_j w · bf16(down · bf16(silu(g) · u))), with g, u =
    bf16(gate · x), bf16(up · x)."""
    gate_w, up_w, down_w = experts
    out = np.zeros((hidden.shape[0], H), np.float32)
    for t in range(hidden.shape[0]):
        x = hidden[t : t + 1]
        for e, w in zip(ids[t], weights[t]):
            g = expected_gemm(x, *gate_w[e]).astype(np.float32)
            u = expected_gemm(x, *up_w[e]).astype(np.float32)
            with np.errstate(over="ignore"):  # exp(-g) = inf for g < -88: silu(g) = -0
                a = (g / (np.float32(1) + np.exp(-g)) * u).astype(BF16)
            d = expected_gemm(a, *down_w[e]).astype(np.float32)[0]
            out[t] = out[t] + np.float32(w) * d
    return out.astype(BF16)


def assert_close_to_reference(got, want):
    """Within one bf16 rounding of the output's scale, and bit for bit almost everywhere (all
    of it on the development machine: glibc's and NumPy's exp agreed on every value here)."""
    got32, want32 = np.asarray(got).astype(np.float32), want.astype(np.float32)
    scale = max(float(np.abs(want32).max()), 1.0)
    np.testing.assert_allclose(got32, want32, rtol=2**-7, atol=scale * 2**-8)
    same = np.mean(np.asarray(got).view(np.uint16) == want.view(np.uint16))
    assert same >= 0.95, f"only {same:.1%} of the outputs are bit for bit the reference's"


def make_layer(rng, experts, layout):
    gate_w, gate = make_experts(rng, experts, I, H, layout)
    up_w, up = make_experts(rng, experts, I, H, layout)
    down_w, down = make_experts(rng, experts, H, I, layout)
    return (gate_w, up_w, down_w), (gate, up, down)


@pytest.mark.parametrize("layout", ["sfb", "k16_by_n"])
def test_precomputed_ids_match_the_reference(rng, layout):
    weights_np, tables = make_layer(rng, 4, layout)
    hidden = small_ints(rng, 5, H)
    ids = np.array([[0, 3], [2, 2], [1, 0], [3, 1], [0, 0]], np.int32)  # a repeated expert too
    weights = np.array(
        [[0.5, 0.25], [1.0, -0.5], [0.75, 0.125], [2.0, 1.0], [0.5, 0.5]], np.float32
    )
    got = metrale.moe_forward(hidden, *tables, top_k=2, topk_ids=ids, topk_weights=weights)
    assert got.dtype == BF16 and got.shape == (5, H)
    assert_close_to_reference(got, layer_reference(hidden, weights_np, ids, weights))


@pytest.mark.parametrize("renormalize", [False, True])
def test_softmax_topk_routing_matches_the_reference(rng, renormalize):
    weights_np, tables = make_layer(rng, 6, "sfb")
    hidden = small_ints(rng, 7, H)
    logits = rng.standard_normal((7, 6)).astype(np.float32)
    logits[3, [1, 4]] = 2.5  # a tie: the lower id first
    out, ids, weights = metrale.moe_forward(
        hidden, *tables, top_k=3, router_logits=logits, renormalize=renormalize, return_routing=True
    )
    want_ids, want_weights = softmax_topk_reference(logits, 3, renormalize)
    np.testing.assert_array_equal(ids, want_ids)
    np.testing.assert_allclose(weights, want_weights, rtol=4 * 2**-23)  # exp: a last fp32 bit
    assert_close_to_reference(out, layer_reference(hidden, weights_np, ids, weights))
    # The same routing handed in as precomputed ids and weights: the same layer, bit for bit.
    again = metrale.moe_forward(hidden, *tables, top_k=3, topk_ids=ids, topk_weights=weights)
    assert_bits_equal(again, out)


def test_residual_and_out(rng):
    weights_np, tables = make_layer(rng, 2, "sfb")
    hidden = small_ints(rng, 3, H)
    ids, weights = np.array([[1], [0], [1]], np.int32), np.ones((3, 1), np.float32)
    residual = small_ints(rng, 3, H)
    out = np.full((3, H), np.nan, BF16)
    got = metrale.moe_forward(
        hidden, *tables, top_k=1, topk_ids=ids, topk_weights=weights, residual=residual, out=out
    )
    assert got is out
    plain = metrale.moe_forward(hidden, *tables, top_k=1, topk_ids=ids, topk_weights=weights)
    want = (plain.astype(np.float32) + residual.astype(np.float32)).astype(BF16)
    # Added before the one rounding: within a bf16 rounding of the sum of the rounded parts.
    np.testing.assert_allclose(out.astype(np.float32), want.astype(np.float32), rtol=2**-7)


def test_refusals_carry_the_library_message(rng):
    _, tables = make_layer(rng, 4, "sfb")
    hidden = small_ints(rng, 2, H)
    ids, weights = np.array([[0, 9], [1, 2]], np.int32), np.full((2, 2), 0.5, np.float32)
    with pytest.raises(
        metrale.InvalidArgumentError,
        match=r"^moe_forward: tokens\.topk_ids\[0\]\[1\] = 9 is outside "
        r"\[0, layer\.num_experts = 4\)",
    ):
        metrale.moe_forward(hidden, *tables, top_k=2, topk_ids=ids, topk_weights=weights)
    logits = np.zeros((2, 4), np.float32)
    logits[1, 2] = np.nan
    with pytest.raises(
        metrale.InvalidArgumentError, match=r"tokens\.router_logits\[1\]\[2\] = nan is not finite"
    ):
        metrale.moe_forward(hidden, *tables, top_k=2, router_logits=logits)
    with pytest.raises(
        metrale.InvalidArgumentError,
        match=r"layer\.top_k = 5 is outside \[1, layer\.num_experts = 4\]",
    ):
        metrale.moe_forward(hidden, *tables, top_k=5, router_logits=np.zeros((2, 4), np.float32))
    with pytest.raises(metrale.InvalidArgumentError, match="routing = 'topk'"):
        metrale.moe_forward(hidden, *tables, top_k=2, router_logits=logits, routing="topk")
    with pytest.raises(metrale.InvalidArgumentError, match="down lives on|gate, up, down are"):
        metrale.moe_forward(hidden, tables[0], tables[1], tables[0], top_k=2, router_logits=logits)


def test_biases_are_checked_before_their_addresses_are_taken(rng):
    _, tables = make_layer(rng, 2, "sfb")
    hidden = small_ints(rng, 3, H)
    ids, weights = np.array([[1], [0], [1]], np.int32), np.ones((3, 1), np.float32)

    def run(biases):
        return metrale.moe_forward(
            hidden, *tables, top_k=1, topk_ids=ids, topk_weights=weights, biases=biases
        )

    down = small_ints(rng, 2, H)  # one [L, H] array: its rows are the experts' biases
    with_bias = run({"down": down})
    assert_bits_equal(run({"down": [down[0], down[1]]}), with_bias)
    plain = run(None)
    assert not np.array_equal(with_bias.view(np.uint16), plain.view(np.uint16))
    refused = metrale.InvalidArgumentError
    with pytest.raises(refused, match=r"biases\['down'\]\[0\] has shape \[1\], expected \[64\]"):
        run({"down": [np.zeros(1, BF16), np.zeros(H, BF16)]})
    with pytest.raises(refused, match=r"biases\['gate'\]\[1\] has dtype float32"):
        run({"gate": [np.zeros(I, BF16), np.zeros(I, np.float32)]})
    with pytest.raises(refused, match=r"biases\['up'\]\[0\] is a list, not an array"):
        run({"up": [[0.0] * I, [0.0] * I]})
    with pytest.raises(refused, match=r"biases\['up'\]\[0\] of shape \[32\] is not C-contig"):
        run({"up": [np.zeros(2 * I, BF16)[::2]] * 2})
    with pytest.raises(refused, match=r"biases\['up'\] has 1 entries, expected 2"):
        run({"up": [np.zeros(I, BF16)]})


def test_int32_arguments_are_range_checked_not_wrapped(rng):
    _, tables = make_layer(rng, 4, "sfb")
    hidden = small_ints(rng, 2, H)
    logits = np.zeros((2, 4), np.float32)
    refused = metrale.InvalidArgumentError
    with pytest.raises(refused, match=r"expert_map\[3\] = 4294967299 is outside int32"):
        metrale.moe_forward(
            hidden, *tables, top_k=2, router_logits=logits, expert_map=[0, 1, 2, 2**32 + 3]
        )
    with pytest.raises(refused, match=r"^metrale\.moe_forward: top_k = 1099511627776 is outside"):
        metrale.moe_forward(hidden, *tables, top_k=2**40, router_logits=logits)
    with pytest.raises(refused, match=r"^metrale\.moe_forward: top_k = 2\.0 is not an integer"):
        metrale.moe_forward(hidden, *tables, top_k=2.0, router_logits=logits)
    out = np.zeros((2, H), BF16)
    out.flags.writeable = False
    with pytest.raises(refused, match=r"^metrale\.moe_forward: out is read-only"):
        metrale.moe_forward(hidden, *tables, top_k=2, router_logits=logits, out=out)
