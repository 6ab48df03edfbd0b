"""The grouped (per-expert) operations and the expert tables they take.

An ExpertTable is one projection of a layer's experts as the library takes it: per expert a
packed [N, K/2] array (in the packed layout, or prepacked: ops.prepack) and its block scales
(SFB-swizzled, or [K/16, N]), on one device, with the host tables of their addresses and the
per-expert scale_2 values. Rows are in expert order: expert e owns group rows
[expert_offsets[e], expert_offsets[e+1]).
"""

from dataclasses import dataclass, field

import numpy as np

from . import _arrays, _metrale
from ._arrays import BF16, E4M3, U8
from ._errors import InvalidArgumentError
from .ops import SCALE_LAYOUTS, _invoke, prepack, swizzle_sfb


@dataclass
class ExpertTable:
    """One projection's experts, ready for the grouped operations (see expert_table)."""

    n: int
    k: int
    layout: str  # "sfb" or "k16_by_n"
    device: str  # "cpu" or "cuda:N"
    packed: list = field(repr=False)  # per expert [N, K/2], kept alive for the pointers below
    scales: list = field(repr=False)  # per expert block scales in `layout`
    scale_2: np.ndarray = field(repr=False)  # float32 [E]
    packed_ptrs: np.ndarray = field(repr=False)  # uint64 [E]
    scale_ptrs: np.ndarray = field(repr=False)  # uint64 [E]
    prepacked: bool = False  # `packed` holds prepacked bytes (ops.prepack)

    @property
    def num_experts(self):
        return len(self.packed)

    def tables(self):
        return _metrale.Tables(self.packed_ptrs, self.scale_ptrs, self.scale_2)


def expert_table(weights, *, layout="sfb", device=None, prepacked=False):
    """An ExpertTable from per-expert weights: Nvfp4Weight objects or (packed [N, K/2], scale
    [N, K/16], scale_2) tuples. `device`: None keeps the arrays where they are, 'cpu' makes host
    (NumPy) tables for the CPU backend, 'cuda[:N]' copies them there (with torch). prepacked=True
    keeps prepacked copies of the packed arrays (ops.prepack; the callers' arrays are not
    changed), which the CUDA kernels decode faster; the results are the same bit for bit."""
    if layout not in SCALE_LAYOUTS:
        raise InvalidArgumentError(
            f"metrale.expert_table: layout = {layout!r}, expected one of {sorted(SCALE_LAYOUTS)}"
        )
    weights = list(weights)
    if not weights:
        raise InvalidArgumentError("metrale.expert_table: no experts given")
    packed_list, scale_list, scale_2 = [], [], []
    n = k = None
    for e, (packed, scale, s2) in enumerate(tuple(w) for w in weights):
        packed, scale = _checked_expert(e, packed, scale, device)
        shape = (packed.shape[0], packed.shape[1] * 2)
        if n is None:
            n, k, where = *shape, _arrays.device_name(packed)
        elif shape != (n, k):
            raise InvalidArgumentError(
                f"metrale.expert_table: expert {e} is [N, K] = {list(shape)}, expert 0 is {[n, k]}"
            )
        elif _arrays.device_name(packed) != where:
            raise InvalidArgumentError(
                f"metrale.expert_table: expert {e} is on {_arrays.device_name(packed)}, "
                f"expert 0 on {where}"
            )
        packed_list.append(prepack(packed) if prepacked else packed)
        scale_list.append(
            swizzle_sfb(scale, n=n, k=k) if layout == "sfb" else _arrays.transposed(scale)
        )
        scale_2.append(float(s2))
    return ExpertTable(
        n=n,
        k=k,
        layout=layout,
        device=_arrays.device_name(packed_list[0]),
        packed=packed_list,
        scales=scale_list,
        scale_2=np.array(scale_2, dtype=np.float32),
        packed_ptrs=np.array([_arrays.data_ptr(p) for p in packed_list], dtype=np.uint64),
        scale_ptrs=np.array([_arrays.data_ptr(s) for s in scale_list], dtype=np.uint64),
        prepacked=bool(prepacked),
    )


def _checked_expert(e, packed, scale, device):
    """Expert `e`'s (packed, scale) on `device`, checked: the table keeps the packed arrays'
    addresses, so a strided view (packed[:, :K/2] of a wider array) or another dtype would be
    read as wrong bytes by every later call."""
    who = "metrale.expert_table"
    packed = _arrays.to_device(packed, device)
    scale = _arrays.to_device(scale, device)
    _arrays.check(who, f"expert {e}'s packed", packed, U8, (None, None))
    n, half_k = (int(d) for d in packed.shape)
    _arrays.check(who, f"expert {e}'s scale", scale, E4M3, (n, half_k // 8), contiguous=False)
    if _arrays.device_name(scale) != _arrays.device_name(packed):
        raise InvalidArgumentError(
            f"{who}: expert {e}'s scale is on {_arrays.device_name(scale)}, its packed on "
            f"{_arrays.device_name(packed)}"
        )
    return packed, scale


def _offsets(who, expert_offsets, m_total, max_rows_per_expert):
    """(offsets array, on_device, m_total, max_rows_per_expert) for the extension."""
    if _arrays.is_device(expert_offsets):
        if m_total is None or max_rows_per_expert is None:
            raise InvalidArgumentError(
                f"{who}: expert_offsets on the device need m_total= and max_rows_per_expert= "
                "(nothing reads device offsets on the host)"
            )
        m_total = _arrays.int32(who, "m_total", m_total)
        max_rows = _arrays.int32(who, "max_rows_per_expert", max_rows_per_expert)
        return _arrays.raw(expert_offsets), True, m_total, max_rows
    host = _arrays.host_int32(who, "expert_offsets", expert_offsets)
    if m_total is None:
        m_total = int(host[-1]) if host.ndim == 1 and host.size else 0
    m_total = _arrays.int32(who, "m_total", m_total)
    return host, False, m_total, _arrays.int32(who, "max_rows_per_expert", max_rows_per_expert or 0)


def check_table(who, name, t, like, like_name):
    """`t` is an ExpertTable on the device of the array `like` (named `like_name`)."""
    if not isinstance(t, ExpertTable):
        raise InvalidArgumentError(
            f"{who}: {name} is a {type(t).__name__}, expected an "
            "ExpertTable (metrale.expert_table or .to_device())"
        )
    device = _arrays.device_name(like)
    if t.device != device:
        raise InvalidArgumentError(
            f"{who}: {name} lives on {t.device} but {like_name} is on {device}"
        )


def _check_tables(who, a, tables):
    first = tables[0]
    for name, t in zip(("gate", "up") if len(tables) == 2 else ("experts",), tables):
        check_table(who, name, t, a, "a")
        if (t.n, t.k, t.layout, t.num_experts) != (
            first.n,
            first.k,
            first.layout,
            first.num_experts,
        ):
            raise InvalidArgumentError(
                f"{who}: gate is [E, N, K] = {[first.num_experts, first.n, first.k]} "
                f"({first.layout}), up is {[t.num_experts, t.n, t.k]} ({t.layout})"
            )
        if t.prepacked != first.prepacked:
            raise InvalidArgumentError(
                f"{who}: gate has prepacked = {first.prepacked}, up has prepacked = "
                f"{t.prepacked}, expected one weight layout"
            )


def _weight_layout(table):
    """The metrale::WeightLayout value of a table's packed arrays: 0 packed, 1 prepacked."""
    return 1 if table.prepacked else 0


def _run(who, a, token_ids, tables, expert_offsets, options):
    """One grouped call; `options`: m_total, max_rows_per_expert, out, stream, backend."""
    _check_tables(who, a, tables)
    offsets, on_device, m_total, max_rows = _offsets(
        who, expert_offsets, options.get("m_total"), options.get("max_rows_per_expert")
    )
    n = tables[0].n
    out = options.get("out")
    outs = list(out) if out is not None else [_arrays.empty(a, (m_total, n), BF16) for _ in tables]
    ids = None if token_ids is None else _arrays.raw(token_ids)
    outs_raw = [_arrays.raw_out(o) for o in outs]
    args = [who, _arrays.raw(a), ids, [t.tables() for t in tables], outs_raw]
    args += [SCALE_LAYOUTS[tables[0].layout], _weight_layout(tables[0])]
    args += [offsets, on_device, m_total, max_rows, n]
    _invoke(_metrale.grouped, a, args, options.get("backend"), options.get("stream"))
    return outs


def grouped_gate_up(a, gate, up, expert_offsets, *, out=None, stream=None, backend=None):
    """(c_gate, c_up) [M_total, N] = a[M_total, K] @ W_e^T for each expert e's rows."""
    options = {"out": out, "stream": stream, "backend": backend}
    return tuple(_run("metrale.grouped_gate_up", a, None, [gate, up], expert_offsets, options))


def grouped_gate_up_fused(a, sorted_token_ids, gate, up, expert_offsets, **options):
    """As grouped_gate_up, but group row i reads row sorted_token_ids[i] of a [tokens, K] (the
    identity when None). Keywords: out, stream, backend, and m_total and max_rows_per_expert,
    which device-side offsets need."""
    _check_options("metrale.grouped_gate_up_fused", options)
    name = "metrale.grouped_gate_up_fused"
    return tuple(_run(name, a, sorted_token_ids, [gate, up], expert_offsets, options))


def grouped_down(a, experts, expert_offsets, **options):
    """c [M_total, N] = a[M_total, K] @ W_e^T for each expert e's rows. Keywords as
    grouped_gate_up_fused; `out` is one array."""
    _check_options("metrale.grouped_down", options)
    if options.get("out") is not None:
        options = {**options, "out": [options["out"]]}
    return _run("metrale.grouped_down", a, None, [experts], expert_offsets, options)[0]


_OPTIONS = ("m_total", "max_rows_per_expert", "out", "stream", "backend")


def _check_options(who, options):
    unknown = sorted(set(options) - set(_OPTIONS))
    if unknown:
        raise TypeError(f"{who}: unexpected keyword arguments {unknown}; it takes {_OPTIONS}")
