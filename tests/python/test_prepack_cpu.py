"""metrale.prepack and metrale.unprepack on the CPU backend, and prepacked ExpertTables: prepack
moves the bits of every 16-bit half where src/format/prepack.hpp's table says (the table written
again here) or, by default, the codes of each whole 64-code group of a row into the fragment
order of src/format/fragment_order.hpp and the bits of its 32-bit words where that file's decode
fetches them (both written again here; a row's K % 64 tail keeps the halves' table); unprepack
inverts it, in place too; the grouped operations and moe_forward on prepacked tables equal the
packed tables' results bit for bit; mixed layouts are refused."""

import numpy as np
import pytest

import metrale
from test_ops_cpu import assert_bits_equal, make_experts, nvfp4_weight, small_ints

# Bit of the sign, e1, e0 and m of code j in a prepacked half.
TABLE = [[15, 8, 7, 6], [12, 5, 4, 3], [14, 2, 1, 0], [13, 11, 10, 9]]
# Bit of the sign, e1, e0 and m of slot j of the low (WORD_TABLE[0]) and high half of a
# fragment-order word: slot 0 in place, slots 1 and 2 rotated left by 10 and 13 bits, slot 3
# under copies shifted by 12, 7, 7 and 2.
WORD_TABLE = [
    [[15, 8, 7, 6], [5, 30, 29, 28], [2, 27, 26, 25], [3, 1, 0, 4]],
    [[31, 24, 23, 22], [21, 14, 13, 12], [18, 11, 10, 9], [19, 17, 16, 20]],
]


def prepack_reference(packed):
    """Each little-endian 16-bit half's four codes, bit by bit to the table's places."""
    halves = np.ascontiguousarray(packed).view("<u2")
    out = np.zeros_like(halves)
    for j in range(4):
        code = (halves >> (4 * j)) & 0xF
        for b in range(4):
            out |= ((code >> (3 - b)) & 1) << TABLE[j][b]
    return out.view(np.uint8).reshape(packed.shape)


def fragment_reference(packed):
    """Each whole 64-code group of a row reordered (word w = 2c + u, half h, slot j holds code
    16 (2u + j // 2) + 8 (j % 2) + 2c + h of the group) and each of its words' codes bit by bit to
    WORD_TABLE's places; a row's K % 64 tail not reordered, its halves through the table."""
    codes = np.empty((packed.shape[0], packed.shape[1] * 2), np.uint8)
    codes[:, 0::2], codes[:, 1::2] = packed & 0xF, packed >> 4
    groups = codes.shape[1] // 64
    out = prepack_reference(packed)  # the tail's halves; the groups are overwritten
    words = out.view("<u4")  # a row is K / 2 bytes, a whole number of words
    for g in range(groups):
        for w in range(8):
            word = np.zeros(packed.shape[0], np.uint32)
            for h in range(2):
                for j in range(4):
                    k = 64 * g + 16 * (2 * (w % 2) + j // 2) + 8 * (j % 2) + 2 * (w // 2) + h
                    code = codes[:, k]
                    for b in range(4):
                        word |= ((code.astype(np.uint32) >> (3 - b)) & 1) << WORD_TABLE[h][j][b]
            words[:, 8 * g + w] = word
    return out


@pytest.mark.parametrize("order", ["fragments", "halves"])
@pytest.mark.parametrize("n, k", [(1, 16), (3, 64), (33, 2880), (2, 1056)])
def test_prepack_moves_the_bits_of_the_table(rng, monkeypatch, order, n, k):
    if order == "halves":
        monkeypatch.setenv("METRALE_PREPACKED_LAYOUT", "halves")
    else:
        monkeypatch.delenv("METRALE_PREPACKED_LAYOUT", raising=False)  # the default
    reference = fragment_reference if order == "fragments" else prepack_reference
    packed = rng.integers(0, 256, (n, k // 2), dtype=np.uint8)
    kept = packed.copy()
    prepacked = metrale.prepack(packed)
    np.testing.assert_array_equal(prepacked, reference(packed))
    np.testing.assert_array_equal(packed, kept)
    np.testing.assert_array_equal(metrale.unprepack(prepacked), packed)
    buffer = packed.copy()
    assert metrale.prepack(buffer, out=buffer) is buffer
    np.testing.assert_array_equal(buffer, prepacked)
    assert metrale.unprepack(buffer, out=buffer) is buffer
    np.testing.assert_array_equal(buffer, packed)


def test_prepack_refusals_carry_the_library_message():
    with pytest.raises(metrale.InvalidArgumentError, match="K = 24 is not a multiple of 16"):
        metrale.prepack(np.zeros((4, 12), np.uint8))
    with pytest.raises(metrale.InvalidArgumentError, match="expected 2 dimensions"):
        metrale.unprepack(np.zeros(16, np.uint8))


def prepacked_experts(rng, experts, n, k, layout):
    weights, packed = make_experts(rng, experts, n, k, layout)
    kept = [w[0].copy() for w in weights]
    prepacked = metrale.expert_table(weights, layout=layout, prepacked=True)
    assert prepacked.prepacked and not packed.prepacked
    for w, before in zip(weights, kept):
        np.testing.assert_array_equal(w[0], before)  # the caller's arrays are not touched
    return packed, prepacked


def test_grouped_operations_on_prepacked_tables(rng):
    offsets = np.array([0, 3, 3, 10, 11], np.int32)
    for layout in ("k16_by_n", "sfb"):
        gate, gate_pre = prepacked_experts(rng, 4, 48, 64, layout)
        up, up_pre = prepacked_experts(rng, 4, 48, 64, layout)
        a = small_ints(rng, 11, 64)
        for got, want in zip(
            metrale.grouped_gate_up(a, gate_pre, up_pre, offsets),
            metrale.grouped_gate_up(a, gate, up, offsets),
        ):
            assert_bits_equal(got, want)
    tokens = small_ints(rng, 4, 64)
    ids = np.array([3, 0, 1, 1, 2, 3, 0, 2, 1, 3, 0], np.int32)
    for got, want in zip(
        metrale.grouped_gate_up_fused(tokens, ids, gate_pre, up_pre, offsets),
        metrale.grouped_gate_up_fused(tokens, ids, gate, up, offsets),
    ):
        assert_bits_equal(got, want)
    down, down_pre = prepacked_experts(rng, 2, 64, 32, "sfb")
    a = small_ints(rng, 5, 32)
    offsets = np.array([0, 2, 5], np.int32)
    assert_bits_equal(
        metrale.grouped_down(a, down_pre, offsets), metrale.grouped_down(a, down, offsets)
    )


def test_moe_forward_on_prepacked_tables(rng):
    h, i = 64, 32
    gate, gate_pre = prepacked_experts(rng, 4, i, h, "sfb")
    up, up_pre = prepacked_experts(rng, 4, i, h, "sfb")
    down, down_pre = prepacked_experts(rng, 4, h, i, "sfb")
    hidden = small_ints(rng, 6, h)
    logits = rng.standard_normal((6, 4)).astype(np.float32)
    want = metrale.moe_forward(hidden, gate, up, down, top_k=2, router_logits=logits)
    got = metrale.moe_forward(hidden, gate_pre, up_pre, down_pre, top_k=2, router_logits=logits)
    assert_bits_equal(got, want)
    with pytest.raises(metrale.InvalidArgumentError, match="expected one weight layout"):
        metrale.moe_forward(hidden, gate_pre, up, down, top_k=2, router_logits=logits)
    with pytest.raises(metrale.InvalidArgumentError, match="expected one weight layout"):
        metrale.grouped_gate_up(hidden, gate_pre, up, [0, 6, 6, 6, 6])


def test_nvfp4_weight_tuples_prepack_too(rng):
    weights = [nvfp4_weight(rng, 16, 32)]
    table = metrale.expert_table(weights, prepacked=True)
    np.testing.assert_array_equal(table.packed[0], prepack_reference(weights[0][0]))
