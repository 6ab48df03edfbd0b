"""metrale.quantize against the independent NumPy reference of ModelOpt's recipe, byte for byte,
on the inputs where quantizers differ; metrale.dequantize against the reference decoder."""

import ml_dtypes
import numpy as np
import pytest

import metrale
import modelopt_reference as ref
from conftest import BF16, bf16, grid_weight, random_weight


def _cases():
    rng = np.random.default_rng(7)
    normal = random_weight(rng, 64, 256)
    heavy = bf16(rng.standard_t(1.5, (48, 128)))  # heavy tails: a few huge values per row
    zero_blocks = random_weight(rng, 32, 128)
    zero_blocks[:, 16:48] = 0  # two all-zero blocks per row
    zero_blocks[5] = 0  # an all-zero row
    huge_range = random_weight(rng, 16, 256) * bf16(
        np.float32(2.0) ** rng.integers(-60, 60, (16, 1))
    )
    huge_range[0, :16] = bf16(1e30)
    huge_range[1, :16] = bf16(1e-30)
    negative_zero = random_weight(rng, 16, 64)
    negative_zero[:, ::3] = bf16(-0.0)
    negative_zero[2] = bf16(-0.0)
    # Tiny negatives next to a huge amax: their fp32 quotient underflows to -0.0.
    underflow = random_weight(rng, 8, 32) * bf16(1e-38)
    underflow[0, 0] = bf16(3e38)
    underflow[3, 5:9] = bf16(-1e-40)
    # Values exactly on the e2m1 decision bounds (the ties) after scaling by a power of two.
    bounds = np.array([0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5.0, 6.0], dtype=np.float32)
    ties = bf16(np.tile(np.concatenate([bounds, -bounds]), (8, 4)) * 2.0)
    return {
        "normal": normal,
        "heavy_tailed": heavy,
        "all_zero_blocks": zero_blocks,
        "huge_range": huge_range,
        "negative_zero": negative_zero,
        "underflow": underflow,
        "ties": ties,
        "on_grid": grid_weight(rng, 32, 64),
    }


CASES = _cases()


@pytest.mark.parametrize("name", sorted(CASES))
def test_quantize_equals_modelopt_reference(name):
    w = CASES[name]
    packed, scale, scale_2 = metrale.quantize(w)
    want_packed, want_scale, want_scale_2 = ref.quantize(w)
    assert packed.dtype == np.uint8 and packed.shape == (w.shape[0], w.shape[1] // 2)
    assert scale.dtype == ml_dtypes.float8_e4m3fn and scale.shape == (w.shape[0], w.shape[1] // 16)
    assert np.float32(scale_2) == np.float32(want_scale_2)
    np.testing.assert_array_equal(scale.view(np.uint8), want_scale)
    mismatch = np.argwhere(packed != want_packed)
    assert mismatch.size == 0, (
        f"{name}: first differing byte at {mismatch[0].tolist()}: "
        f"{packed[tuple(mismatch[0])]:#04x} != {want_packed[tuple(mismatch[0])]:#04x}"
    )


def test_negative_zero_gives_the_plus_zero_code():
    w = bf16(np.full((1, 16), 1.0))
    w[0, 3] = bf16(-0.0)
    packed, _, _ = metrale.quantize(w)
    assert packed[0, 1] >> 4 == 0x0  # element 3: high nibble of byte 1
    w[0, 3] = bf16(-0.01)  # a negative that rounds to zero keeps its sign, as in ModelOpt
    packed, _, _ = metrale.quantize(w)
    assert packed[0, 1] >> 4 == 0x8


def test_reference_roundings_agree_on_every_float_near_the_grid():
    q = np.linspace(-7, 7, 1 << 16, dtype=np.float32)
    q = np.concatenate([q, np.nextafter(q, np.float32(np.inf)), ref.E2M1_BOUNDS, -ref.E2M1_BOUNDS])
    np.testing.assert_array_equal(ref.e2m1_codes_by_bounds(q), ref.e2m1_codes_by_ml_dtypes(q))


@pytest.mark.parametrize("name", ["normal", "heavy_tailed", "all_zero_blocks", "on_grid"])
def test_dequantize_matches_reference_and_round_trips(name):
    w = CASES[name]
    packed, scale, scale_2 = metrale.quantize(w)
    got = metrale.dequantize(packed, scale, scale_2)
    assert got.dtype == BF16 and got.shape == w.shape
    np.testing.assert_array_equal(
        got.view(np.uint16), ref.dequantize(packed, scale, scale_2).view(np.uint16)
    )
    # Quantizing the dequantized weight gives the same codes (it is on the grid already), except
    # that a 0x8 code decoded to -0.0 comes back as 0x0 (ModelOpt's rule).
    again = metrale.quantize(got)
    low, high = packed & 0xF, packed >> 4
    low[low == 0x8], high[high == 0x8] = 0, 0
    np.testing.assert_array_equal(again[0], low | (high << 4))


def test_out_buffers_are_written():
    w = CASES["normal"]
    packed = np.zeros((w.shape[0], w.shape[1] // 2), np.uint8)
    scale = np.zeros((w.shape[0], w.shape[1] // 16), ml_dtypes.float8_e4m3fn)
    got = metrale.quantize(w, out=(packed, scale))
    assert got[0] is packed and got[1] is scale
    np.testing.assert_array_equal(packed, ref.quantize(w)[0])


def test_raw_bits_are_accepted():
    w = CASES["normal"]
    np.testing.assert_array_equal(metrale.quantize(w.view(np.uint16))[0], metrale.quantize(w)[0])


@pytest.mark.parametrize(
    "bad, message",
    [
        (np.zeros((4, 24), BF16), "K = 24 is not a multiple of 16"),
        (np.zeros((4, 32), np.float32), "w has dtype"),
        (np.zeros((4, 64), BF16)[:, ::2], "not C-contiguous"),
        (np.zeros((64,), BF16), "expected 2 dimensions"),
    ],
)
def test_bad_input_raises_value_error_with_the_message(bad, message):
    with pytest.raises(metrale.InvalidArgumentError, match=message) as info:
        metrale.quantize(bad)
    assert isinstance(info.value, ValueError) and isinstance(info.value, metrale.Error)
