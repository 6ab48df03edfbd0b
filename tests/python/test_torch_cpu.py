"""torch CPU tensors through every operation (skipped without torch: CI installs none; the GPU
machine and most users have it): inputs and out= buffers arrive through DLPack, where NumPy's come
through the buffer protocol, and quantize and dequantize take their torch code paths; each result
must equal the NumPy call's bit for bit. Then the outputs torch itself would refuse: a tensor that
requires grad, while grad mode is on."""

import numpy as np
import pytest

import metrale
from test_ops_cpu import nvfp4_weight, small_ints
from test_quantize import CASES

torch = pytest.importorskip("torch")


def tensor(array):
    """A NumPy array (bf16 and e4m3 included) as a torch CPU tensor."""
    return metrale._arrays.from_numpy(array, torch.empty(0))


def assert_same(got, want):
    assert isinstance(got, torch.Tensor) and got.device.type == "cpu"
    got = metrale._arrays.to_numpy(got)
    np.testing.assert_array_equal(got.view(np.uint8), np.asarray(want).view(np.uint8))


def poisoned(shape):
    return torch.full(shape, float("nan"), dtype=torch.bfloat16)


@pytest.mark.parametrize("name", sorted(CASES))
def test_quantize_into_torch_buffers(name):
    w = CASES[name]
    want = metrale.quantize(w)
    packed, scale, scale_2 = metrale.quantize(tensor(w))
    assert_same(packed, want[0])
    assert_same(scale, want[1])
    assert scale_2 == want[2]
    out = (torch.empty_like(packed), torch.empty_like(scale))
    metrale.quantize(tensor(w), out=out)
    assert_same(out[0], want[0])
    assert_same(out[1], want[1])
    assert_same(metrale.dequantize(packed, scale, scale_2), metrale.dequantize(*want))


def test_gemms_and_swizzle_into_torch_buffers(rng):
    act, weight = small_ints(rng, 37, 256), small_ints(rng, 72, 256)
    out = poisoned((37, 72))
    metrale.gemm(tensor(act), torch.nn.Parameter(tensor(weight), requires_grad=True), out=out)
    assert_same(out, metrale.gemm(act, weight))
    packed, scale, scale_2 = nvfp4_weight(rng, 200, 256)
    sfb = torch.empty_like(tensor(metrale.swizzle_sfb(scale)))
    metrale.swizzle_sfb(tensor(scale), out=sfb)
    assert_same(sfb, metrale.swizzle_sfb(scale))
    out = poisoned((37, 200))
    metrale.nvfp4_gemm(tensor(act), tensor(packed), sfb, scale_2, scale_layout="sfb", out=out)
    assert_same(out, metrale.nvfp4_gemm(act, packed, scale, scale_2))


def test_grouped_and_moe_on_torch_tensors(rng):
    def weights(count, n, k):
        return [nvfp4_weight(rng, n, k, 0.25 * (e + 1)) for e in range(count)]

    def tables(per_expert):
        as_torch = [(tensor(packed), tensor(scale), s2) for packed, scale, s2 in per_expert]
        return metrale.expert_table(per_expert), metrale.expert_table(as_torch)

    (gate, gate_t), (up, up_t), (down, down_t) = (
        tables(weights(4, n, k)) for n, k in ((128, 256), (128, 256), (256, 128))
    )
    offsets = np.array([0, 5, 5, 40, 64], np.int32)
    a, h = small_ints(rng, 64, 256), small_ints(rng, 64, 128)
    got = metrale.grouped_gate_up(tensor(a), gate_t, up_t, tensor(offsets))
    for g, w in zip(got, metrale.grouped_gate_up(a, gate, up, offsets)):
        assert_same(g, w)
    tokens, ids = small_ints(rng, 20, 256), rng.integers(0, 20, 64).astype(np.int32)
    got = metrale.grouped_gate_up_fused(tensor(tokens), tensor(ids), gate_t, up_t, offsets)
    for g, w in zip(got, metrale.grouped_gate_up_fused(tokens, ids, gate, up, offsets)):
        assert_same(g, w)
    out = poisoned((64, 256))
    metrale.grouped_down(tensor(h), down_t, offsets, out=out)
    assert_same(out, metrale.grouped_down(h, down, offsets))
    hidden, logits = small_ints(rng, 9, 256), rng.standard_normal((9, 4)).astype(np.float32)
    want, want_ids, _ = metrale.moe_forward(
        hidden, gate, up, down, top_k=2, router_logits=logits, return_routing=True
    )
    out = poisoned((9, 256))
    _, ids_t, _ = metrale.moe_forward(
        tensor(hidden), gate_t, up_t, down_t, top_k=2, router_logits=tensor(logits),
        return_routing=True, out=out,
    )
    assert_same(out, want)
    np.testing.assert_array_equal(metrale._arrays.to_numpy(ids_t), want_ids)


def test_an_output_that_requires_grad_is_refused_while_grad_mode_is_on(rng):
    act_np, weight_np = small_ints(rng, 4, 32), small_ints(rng, 8, 32)
    act, weight = tensor(act_np), tensor(weight_np)
    out = torch.zeros((4, 8), dtype=torch.bfloat16, requires_grad=True)
    with pytest.raises(metrale.InvalidArgumentError, match="metrale.gemm: out requires grad"):
        metrale.gemm(act, weight, out=out)
    assert not out.detach().any(), "the refused output was written"
    w = small_ints(rng, 8, 32)
    buffers = (
        torch.zeros((8, 16), dtype=torch.uint8),
        torch.zeros((8, 2), dtype=torch.float8_e4m3fn),
    )
    buffers[1].requires_grad_()
    with pytest.raises(metrale.InvalidArgumentError, match=r"out\[1\] requires grad"):
        metrale.quantize(tensor(w), out=buffers)
    assert not buffers[0].any(), "out[0] was written before out[1] was refused"
    with torch.no_grad():  # as torch's own out= arguments: written, autograd not involved
        metrale.gemm(act, weight, out=out)
    assert_same(out.detach(), metrale.gemm(act_np, weight_np))
