"""The MoE layer in one call: routing, gate/up with the activation, down, and the combine.

The layer's experts are three ExpertTables (grouped.py) of one layout and device: gate and up
[I, H/2] packed each, down [H, I/2]. The formulas, the routing functions and every rounding point
are docs/api.md's ("The MoE layer"); the CPU backend is the library's oracle, and CUDA arrays run
on the CUDA backend (no host synchronisation: graph-capturable).
"""

import numpy as np

from . import _arrays, _metrale
from ._arrays import BF16, F32, I32
from ._errors import InvalidArgumentError
from .grouped import _weight_layout, check_table
from .ops import SCALE_LAYOUTS, _invoke

# metrale::MoeRouting and metrale::MoeActivation values (include/metrale/metrale.hpp).
ROUTINGS = {"softmax_topk": 0, "sigmoid_grouped_topk": 1, "precomputed": 2}
ACTIVATIONS = {"silu": 0, "swiglu_clamped": 1}

_WHO = "metrale.moe_forward"


def _choice(name, value, choices):
    if value not in choices:
        raise InvalidArgumentError(f"{_WHO}: {name} = {value!r}, expected one of {list(choices)}")
    return choices[value]


def _check_experts(hidden, gate, up, down):
    for name, t in (("gate", gate), ("up", up), ("down", down)):
        check_table(_WHO, name, t, hidden, "hidden")
    shapes = [(t.num_experts, t.n, t.k, t.layout) for t in (gate, up, down)]
    i, h = gate.n, gate.k
    if shapes[1] != shapes[0] or shapes[2] != (gate.num_experts, h, i, gate.layout):
        raise InvalidArgumentError(
            f"{_WHO}: gate, up, down are [L, N, K] (layout) = {shapes}, expected gate and up "
            "[L, I, H] and down [L, H, I] in one layout"
        )
    prepacked = [t.prepacked for t in (gate, up, down)]
    if len(set(prepacked)) != 1:
        raise InvalidArgumentError(
            f"{_WHO}: gate, up, down have prepacked = {prepacked}, expected one weight layout"
        )


def _bias_table(name, biases, experts, length, hidden):
    """None, or (uint64 [L] host table of the per-expert bias arrays' addresses, the arrays). Only
    the addresses reach the library, so each array is checked here: bf16 [length] (a float32 one
    would be read as bf16 pairs, a shorter one past its end), C-contiguous, on hidden's device,
    and an array already (the address of a list's temporary copy would be freed at once). The
    arrays are returned for the caller to keep alive until the call returns."""
    if biases is None:
        return None, []
    biases = list(biases)  # a list of L arrays, or one [L, length] array (its rows)
    if len(biases) != experts:
        raise InvalidArgumentError(f"{_WHO}: {name} has {len(biases)} entries, expected {experts}")
    device = _arrays.device_name(hidden)
    for e, b in enumerate(biases):
        _arrays.check(_WHO, f"{name}[{e}]", b, BF16, (length,))
        if _arrays.device_name(b) != device:
            raise InvalidArgumentError(
                f"{_WHO}: {name}[{e}] is on {_arrays.device_name(b)} but hidden is on {device}"
            )
    return np.array([_arrays.data_ptr(b) for b in biases], dtype=np.uint64), biases


def moe_forward(
    hidden,
    gate,
    up,
    down,
    *,
    top_k,
    router_logits=None,
    topk_ids=None,
    topk_weights=None,
    routing=None,
    renormalize=False,
    n_group=1,
    topk_group=1,
    routed_scaling_factor=1.0,
    correction_bias=None,
    activation="silu",
    swiglu_alpha=1.702,
    swiglu_limit=7.0,
    num_experts=None,
    expert_map=None,
    biases=None,
    residual=None,
    out=None,
    return_routing=False,
    stream=None,
    backend=None,
):
    """out [T, H] bf16 = Σ over each token's top_k experts of weight · down(act(gate·x, up·x)),
    summed in fp32 in slot order (+ residual). hidden [T, H] bf16; gate, up, down ExpertTables.

    Routing: router_logits [T, E] (fp32 or bf16) with routing "softmax_topk" (the default with
    logits) or "sigmoid_grouped_topk" (n_group, topk_group, correction_bias [E] fp32,
    renormalize, routed_scaling_factor); or topk_ids [T, k] int32 and topk_weights [T, k] fp32
    ("precomputed", the default without logits). num_experts: E (the logits' columns, else the
    tables' length). expert_map: host int [E], local id or -1 (a remote expert adds nothing).
    biases: {"gate": [...], "up": [...], "down": [...]}, per local expert bf16 arrays (any subset).
    return_routing: also return (topk_ids [T, k] int32, topk_weights [T, k] fp32) as chosen."""
    _check_experts(hidden, gate, up, down)
    if routing is None:
        routing = "precomputed" if router_logits is None else "softmax_topk"
    call = _metrale.MoeCall()
    call.routing = _choice("routing", routing, ROUTINGS)
    call.activation = _choice("activation", activation, ACTIVATIONS)
    call.scale_layout = SCALE_LAYOUTS[gate.layout]
    call.weight_layout = _weight_layout(gate)
    if num_experts is None:
        num_experts = router_logits.shape[-1] if router_logits is not None else gate.num_experts
    call.num_experts = _arrays.int32(_WHO, "num_experts", num_experts)
    call.top_k = _arrays.int32(_WHO, "top_k", top_k)
    call.n_group = _arrays.int32(_WHO, "n_group", n_group)
    call.topk_group = _arrays.int32(_WHO, "topk_group", topk_group)
    call.renormalize = bool(renormalize)
    call.routed_scaling_factor = float(routed_scaling_factor)
    call.swiglu_alpha, call.swiglu_limit = float(swiglu_alpha), float(swiglu_limit)
    call.proj = [gate.tables(), up.tables(), down.tables()]
    unknown = sorted(set(biases or {}) - {"gate", "up", "down"})
    if unknown:
        raise InvalidArgumentError(f"{_WHO}: biases has keys {unknown}, expected gate, up, down")
    lengths = {"gate": gate.n, "up": gate.n, "down": gate.k}  # [I], [I], [H]
    # (table, arrays) per projection: the bias arrays stay referenced here until the call returns.
    tables = [
        _bias_table(f"biases[{p!r}]", (biases or {}).get(p), gate.num_experts, lengths[p], hidden)
        for p in ("gate", "up", "down")
    ]
    call.biases = [table for table, _ in tables]
    if expert_map is not None:
        call.expert_map = _arrays.host_int32(_WHO, "expert_map", expert_map)
    raw = _arrays.raw
    if router_logits is not None:
        call.router_logits = raw(router_logits)
        # bf16 logits: torch's and ml_dtypes' bfloat16, or their bits (uint16: CuPy)
        bf16 = str(router_logits.dtype).replace("torch.", "") in ("bfloat16", "uint16", "int16")
        call.logits_dtype = 1 if bf16 else 0
    call.topk_ids = None if topk_ids is None else raw(topk_ids)
    call.topk_weights = None if topk_weights is None else raw(topk_weights)
    call.correction_bias = None if correction_bias is None else raw(correction_bias)
    call.residual = None if residual is None else raw(residual)
    t, k = hidden.shape[0], call.top_k
    out = _arrays.empty(hidden, (t, gate.k), BF16) if out is None else out
    routes = None
    if return_routing:
        routes = (_arrays.empty(hidden, (t, k), I32), _arrays.empty(hidden, (t, k), F32))
        call.topk_ids_out, call.topk_weights_out = raw(routes[0]), raw(routes[1])
    args = [call, raw(hidden), _arrays.raw_out(out), gate.n]
    _invoke(_metrale.moe, hidden, args, backend, stream)
    return (out, *routes) if return_routing else out
