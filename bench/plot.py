#!/usr/bin/env python3
"""Plot a `metrale bench --json` file: % of floor against tokens, per model, one line per
implementation, gate_up, down, dense and moe side by side (the ops the run has).

    python3 bench/plot.py results.json out.png

% of floor = floor / measured time, where the floor (PERF.md) is the larger of the bytes floor
(active experts' NVFP4 weights + activations + outputs over the read ceiling) and the compute
floor (2·rows·N·K over the bf16 ceiling), both ceilings measured in the same run. 100 % is the
floor itself; the dotted lines are PERF.md's targets for our kernels (80 % decode, 85 % prefill).
metrale's points say which kernel family ran them (the rows' `kernel` field): circles the decode
family, triangles the stream family, squares the tiled family, diamonds several in one call. The moe panel plots the whole
layer against its floor (gate_up's plus down's on the layer's routing) and, on its right axis,
layer / (gate_up + down) with issue 9's targets (1.15 below T = 64, 1.10 from T = 64).
"""
import json
import sys

OPS = ("gate_up", "down", "dense", "moe")
# One colour and marker per producer, stable across plots.
STYLE = {
    "metrale": ("tab:red", "o"),
    "cuBLASLt": ("tab:blue", "s"),
    "cuBLAS-grouped": ("tab:cyan", "D"),
    "dequant+cuBLASLt": ("tab:gray", "v"),
    "CUTLASS": ("tab:green", "^"),
    "bf16-grouped (CUTLASS)": ("tab:olive", "P"),
}


def load(path):
    with open(path) as f:
        doc = json.load(f)
    rows = [
        r
        for r in doc.get("rows", [])
        if r.get("op") in OPS and r.get("status") == "ok" and r.get("pct_floor") is not None
    ]
    return doc.get("metadata", {}), rows


# metrale rows: the marker of the kernel family that ran each point ("several": more than one
# family's launches in the call).
FAMILY_MARKER = {"sm90-decode": "o", "sm90-stream": "v", "sm90-tiled": "s", "several": "D"}


def family(row):
    kernel = row.get("kernel", "")
    names = [name for name in FAMILY_MARKER if name != "several" and name in kernel]
    return "several" if len(names) > 1 else (names[0] if names else None)


def mark_families(ax, selected):
    ours = [r for r in selected if r["impl"] == "metrale" and family(r)]
    for name, marker in FAMILY_MARKER.items():
        points = [(r["tokens"], r["pct_floor"]) for r in ours if family(r) == name]
        if points:
            ax.scatter([t for t, _ in points], [p for _, p in points], marker=marker, s=60,
                       facecolors="none", edgecolors="black", linewidths=1.0, zorder=3,
                       label=f"metrale: {name}")


def plot_ratio(ax, selected):
    """moe: layer / (gate_up + down) on a right-hand axis, with the targets."""
    points = sorted(
        (r["tokens"], r["moe"]["layer_over_grouped"])
        for r in selected
        if r.get("moe", {}).get("layer_over_grouped") is not None
    )
    if not points:
        return
    right = ax.twinx()
    right.plot([t for t, _ in points], [q for _, q in points], color="tab:purple", marker="x",
               linestyle="--", label="layer / (gate_up + down)")
    right.axhline(1.15, color="tab:purple", linewidth=0.6, linestyle=":")
    right.axhline(1.10, color="tab:purple", linewidth=0.6, linestyle="-.")
    right.set_ylabel("layer / (gate_up + down)", fontsize=8, color="tab:purple")
    right.legend(fontsize=7, loc="lower right")


def title(meta):
    gpu = meta.get("gpu", {}).get("name", "no GPU")
    return (
        f"metrale bench — {gpu}, driver {meta.get('driver', '?')}, CUDA {meta.get('cuda_runtime', '?')},\n"
        f"commit {meta.get('commit', '?')}, {meta.get('date', '?')}"
    )


def main(argv):
    if len(argv) != 3:
        print("usage: python3 bench/plot.py results.json out.png", file=sys.stderr)
        return 2
    meta, rows = load(argv[1])
    if not rows:
        print(
            f"plot.py: {argv[1]} has no gate_up/down/dense/moe rows with a floor "
            "(a CPU run measures no ceilings, so it has nothing to plot)",
            file=sys.stderr,
        )
        return 1
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    models = list(dict.fromkeys(r["model"] for r in rows))
    ops = [op for op in OPS if any(r["op"] == op for r in rows)]
    fig, axes = plt.subplots(
        len(models), len(ops), figsize=(6 * len(ops), 3.2 * len(models)), squeeze=False,
        sharex=True
    )
    for i, model in enumerate(models):
        for j, op in enumerate(ops):
            ax = axes[i][j]
            selected = [r for r in rows if r["model"] == model and r["op"] == op]
            for impl in dict.fromkeys(r["impl"] for r in selected):
                points = sorted((r["tokens"], r["pct_floor"]) for r in selected if r["impl"] == impl)
                color, marker = STYLE.get(impl, (None, "x"))
                ax.plot(
                    [t for t, _ in points],
                    [p for _, p in points],
                    label=impl,
                    color=color,
                    marker=marker,
                    linewidth=2.2 if impl == "metrale" else 1.2,
                )
            mark_families(ax, selected)
            if op == "moe":
                plot_ratio(ax, selected)
            ax.axhline(100, color="black", linewidth=0.8)
            ax.axhline(80, color="tab:red", linewidth=0.6, linestyle=":")
            ax.axhline(85, color="tab:red", linewidth=0.6, linestyle="--")
            ax.set_xscale("log", base=2)
            ticks = sorted({r["tokens"] for r in rows})
            ax.set_xticks(ticks)
            ax.set_xticklabels([str(t) for t in ticks], fontsize=8)
            ax.set_ylim(bottom=0)
            ax.grid(True, which="major", alpha=0.3)
            ax.set_title(f"{model} — {op}", fontsize=10)
            if j == 0:
                ax.set_ylabel("% of floor")
            if i == len(models) - 1:
                ax.set_xlabel("tokens T (rows = T·top-k)")
            if selected:
                ax.legend(fontsize=7, loc="best")
    fig.suptitle(title(meta), fontsize=9)
    fig.tight_layout(rect=(0, 0, 1, 0.96))
    fig.savefig(argv[2], dpi=120)
    print(f"wrote {argv[2]}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
