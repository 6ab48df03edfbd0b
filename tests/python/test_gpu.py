"""GPU tests (skipped without torch and a CUDA device; run on the H200, docs/testing.md): every
operation through torch CUDA tensors against the CPU backend bit for bit (exact-mode inputs), the
caller's stream (work queued on a side stream stays there), and CUDA-graph capture of a call."""

import numpy as np
import pytest

import metrale
from test_moe_cpu import assert_close_to_reference
from test_ops_cpu import nvfp4_weight, small_ints
from test_quantize import CASES

torch = pytest.importorskip("torch")
pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device"),
]


def cuda(array):
    """A NumPy array (bf16 and e4m3 included) as a torch CUDA tensor."""
    return metrale._arrays.from_numpy(array, torch.empty(0, device="cuda"))


def host(tensor):
    return metrale._arrays.to_numpy(tensor)


def assert_same(got_tensor, want):
    assert isinstance(got_tensor, torch.Tensor) and got_tensor.is_cuda
    got = host(got_tensor)
    np.testing.assert_array_equal(got.view(np.uint8), np.asarray(want).view(np.uint8))


def test_the_cuda_backend_is_built():
    assert metrale.backends()["cuda"] == "built"


@pytest.mark.parametrize("name", sorted(CASES))
def test_quantize_and_dequantize_equal_the_cpu(name):
    w = CASES[name]
    packed, scale, scale_2 = metrale.quantize(cuda(w))
    want = metrale.quantize(w)
    assert_same(packed, want[0])
    assert_same(scale, want[1])
    assert scale.dtype == torch.float8_e4m3fn and scale_2 == want[2]
    assert_same(metrale.dequantize(packed, scale, scale_2), metrale.dequantize(*want))


def test_swizzle_gemm_and_nvfp4_gemm_equal_the_cpu(rng):
    packed, scale, scale_2 = nvfp4_weight(rng, 200, 256)
    act, weight = small_ints(rng, 37, 256), small_ints(rng, 72, 256)
    assert_same(metrale.swizzle_sfb(cuda(scale)), metrale.swizzle_sfb(scale))
    assert_same(metrale.gemm(cuda(act), cuda(weight)), metrale.gemm(act, weight))
    for layout in ("n_by_k16", "k16_by_n", "sfb"):
        given = {
            "n_by_k16": scale,
            "k16_by_n": np.ascontiguousarray(scale.T),
            "sfb": metrale.swizzle_sfb(scale),
        }[layout]
        got = metrale.nvfp4_gemm(cuda(act), cuda(packed), cuda(given), scale_2, scale_layout=layout)
        assert_same(got, metrale.nvfp4_gemm(act, packed, given, scale_2, scale_layout=layout))


def experts(rng, count, n, k):
    weights = [nvfp4_weight(rng, n, k, 0.25 * (e + 1)) for e in range(count)]
    return (
        metrale.expert_table(weights, device="cpu"),
        metrale.expert_table(weights, device="cuda"),
    )


def test_grouped_ops_equal_the_cpu(rng):
    offsets = np.array([0, 5, 5, 40, 64], np.int32)
    gate_cpu, gate = experts(rng, 4, 128, 256)
    up_cpu, up = experts(rng, 4, 128, 256)
    down_cpu, down = experts(rng, 4, 256, 128)
    a = small_ints(rng, 64, 256)
    for got, want in zip(
        metrale.grouped_gate_up(cuda(a), gate, up, offsets),
        metrale.grouped_gate_up(a, gate_cpu, up_cpu, offsets),
    ):
        assert_same(got, want)
    tokens = small_ints(rng, 20, 256)
    ids = rng.integers(0, 20, 64).astype(np.int32)
    fused = metrale.grouped_gate_up_fused(cuda(tokens), cuda(ids), gate, up, offsets)
    for got, want in zip(
        fused, metrale.grouped_gate_up_fused(tokens, ids, gate_cpu, up_cpu, offsets)
    ):
        assert_same(got, want)
    h = small_ints(rng, 64, 128)
    want = metrale.grouped_down(h, down_cpu, offsets)
    assert_same(metrale.grouped_down(cuda(h), down, offsets), want)
    on_device = metrale.grouped_down(
        cuda(h), down, cuda(offsets), m_total=64, max_rows_per_expert=35
    )
    assert_same(on_device, want)


def test_work_runs_on_the_callers_stream(rng):
    act, weight = small_ints(rng, 64, 512), small_ints(rng, 128, 512)
    a, w = cuda(act), cuda(weight)
    out = torch.full((64, 128), float("nan"), dtype=torch.bfloat16, device="cuda")
    torch.cuda.synchronize()
    side = torch.cuda.Stream()
    with torch.cuda.stream(side):
        torch.cuda._sleep(200_000_000)  # ~0.1 s of the side stream before the call
        metrale.gemm(a, w, out=out)
    assert not side.query(), "the call did not queue behind the side stream's work"
    # Read on the default stream, which does not wait for the side stream: still the poison.
    assert torch.isnan(out.float()).all().item()
    side.synchronize()
    assert_same(out, metrale.gemm(act, weight))
    explicit = torch.cuda.Stream()
    out2 = metrale.gemm(a, w, stream=explicit)
    explicit.synchronize()
    assert_same(out2, metrale.gemm(act, weight))


def test_graph_capture_of_a_grouped_call(rng):
    offsets = np.array([0, 10, 10, 30], np.int32)
    down_cpu, down = experts(rng, 3, 256, 128)
    h = cuda(small_ints(rng, 30, 128))
    device_offsets = cuda(offsets)
    out = torch.empty((30, 256), dtype=torch.bfloat16, device="cuda")
    metrale.grouped_down(h, down, device_offsets, m_total=30, max_rows_per_expert=20, out=out)
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        metrale.grouped_down(h, down, device_offsets, m_total=30, max_rows_per_expert=20, out=out)
    new_h = small_ints(rng, 30, 128)
    h.copy_(cuda(new_h))
    out.fill_(float("nan"))
    graph.replay()
    torch.cuda.synchronize()
    assert_same(out, metrale.grouped_down(new_h, down_cpu, offsets))


def test_moe_forward_on_cuda_tensors_equals_the_cpu(rng):
    """The whole layer from CUDA tensors against the CPU backend on the same inputs: the routing
    (ids and weights) bit for bit, the output within a bf16 rounding of its scale (the down
    GEMM's fp32 sums run in another order on the GPU) and almost everywhere bit for bit."""
    layer_cpu = [experts(rng, 6, n, k) for n, k in ((128, 256), (128, 256), (256, 128))]
    hidden = small_ints(rng, 9, 256)
    logits = rng.standard_normal((9, 6)).astype(np.float32)
    residual = small_ints(rng, 9, 256)
    want, want_ids, want_weights = metrale.moe_forward(
        hidden, *(cpu for cpu, _ in layer_cpu), top_k=2, router_logits=logits,
        residual=residual, return_routing=True,
    )
    got, ids, weights = metrale.moe_forward(
        cuda(hidden), *(gpu for _, gpu in layer_cpu), top_k=2, router_logits=cuda(logits),
        residual=cuda(residual), return_routing=True,
    )
    assert got.is_cuda and ids.is_cuda
    np.testing.assert_array_equal(host(ids), want_ids)
    np.testing.assert_array_equal(host(weights).view(np.uint32), want_weights.view(np.uint32))
    assert_close_to_reference(host(got), want)


def test_device_mix_and_cpu_tables_are_refused(rng):
    act, weight = small_ints(rng, 4, 32), small_ints(rng, 8, 32)
    with pytest.raises(metrale.InvalidArgumentError, match="weight is on cpu:0 but"):
        metrale.gemm(cuda(act), torch.from_numpy(weight.view(np.int16)).view(torch.bfloat16))
    table, _ = experts(rng, 1, 32, 32)
    with pytest.raises(metrale.InvalidArgumentError, match="lives on cpu but a is on cuda:0"):
        metrale.grouped_down(cuda(small_ints(rng, 4, 32)), table, [0, 4])
