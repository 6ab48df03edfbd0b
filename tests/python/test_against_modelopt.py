"""metrale.quantize against ModelOpt's own NVFP4QTensor.quantize(w, 16), run on torch CPU tensors.
Skipped where nvidia-modelopt and torch are not installed (CI installs neither: the independent
reference in modelopt_reference.py is CI's check); docs/python.md says how to run it."""

import numpy as np
import pytest

import metrale
from test_quantize import CASES

torch = pytest.importorskip("torch")
nvfp4_tensor = pytest.importorskip("modelopt.torch.quantization.qtensor.nvfp4_tensor")


def modelopt_quantize(w):
    t = torch.from_numpy(w.view(np.int16).copy()).view(torch.bfloat16)
    q, scale, scale_2 = nvfp4_tensor.NVFP4QTensor.quantize(t, 16)
    return (q._quantized_data.numpy(), scale.view(torch.uint8).numpy(), np.float32(scale_2.item()))


def assert_same(w, got):
    want = modelopt_quantize(w)
    np.testing.assert_array_equal(got[0], want[0])
    np.testing.assert_array_equal(np.asarray(got[1]).view(np.uint8), want[1])
    assert np.float32(got[2]) == want[2]


@pytest.mark.parametrize("name", sorted(set(CASES) - {"all_zero_tensor"}))
def test_cases_equal_modelopt(name):
    assert_same(CASES[name], metrale.quantize(CASES[name]))


@pytest.mark.parametrize("seed", range(40))
def test_random_shapes_and_distributions_equal_modelopt(seed):
    rng = np.random.default_rng(seed)
    n, k = int(rng.integers(1, 70)), 16 * int(rng.integers(1, 20))
    draw = [rng.standard_normal, lambda s: rng.standard_t(1.2, s), lambda s: rng.laplace(size=s)]
    w = draw[seed % 3]((n, k)) * np.float32(2.0) ** rng.integers(-40, 40)
    w[rng.random((n, k)) < 0.1] = -0.0
    w = w.astype(np.float32).astype(CASES["normal"].dtype)
    assert_same(w, metrale.quantize(w))


def test_torch_cpu_tensors_in_and_out():
    w = CASES["negative_zero"]
    t = torch.from_numpy(w.view(np.int16).copy()).view(torch.bfloat16)
    packed, scale, scale_2 = metrale.quantize(t)
    assert isinstance(packed, torch.Tensor) and scale.dtype == torch.float8_e4m3fn
    assert_same(w, (packed.numpy(), scale.view(torch.uint8).numpy(), scale_2))
    back = metrale.dequantize(packed, scale, scale_2)
    assert back.dtype == torch.bfloat16
    np.testing.assert_array_equal(
        back.view(torch.int16).numpy(), metrale.dequantize(*metrale.quantize(w)).view(np.int16)
    )


def test_a_3d_expert_tensor_equals_modelopt_stacked():
    # ModelOpt quantizes a fused [E, N, K] expert tensor in one call (one scale_2); the converter
    # quantizes the same experts stacked as [E*N, K]: the bytes must be the same.
    rng = np.random.default_rng(3)
    w3 = (rng.standard_normal((4, 24, 64)) * np.arange(1, 5)[:, None, None]).astype(np.float32)
    w3 = w3.astype(CASES["normal"].dtype)
    t = torch.from_numpy(w3.view(np.int16).copy()).view(torch.bfloat16)
    q, scale, scale_2 = nvfp4_tensor.NVFP4QTensor.quantize(t, 16)
    got = metrale.quantize(w3.reshape(4 * 24, 64))
    np.testing.assert_array_equal(got[0].reshape(4, 24, 32), q._quantized_data.numpy())
    np.testing.assert_array_equal(
        got[1].view(np.uint8).reshape(4, 24, 4), scale.view(torch.uint8).numpy()
    )
    assert np.float32(got[2]) == np.float32(scale_2.item())
