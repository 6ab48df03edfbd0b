#!/usr/bin/env python3
"""Times torch._grouped_mm (bf16; CUTLASS's sm90 ptr-array grouped GEMM inside) on the shapes and
routings of a `metrale bench --json` file, and says for each (model, op, T) whether the bench's
`bf16-grouped (CUTLASS)` arm is within 10 % of it (issue 8: that arm is the bf16 opponent of our
prefill kernels, and it is only a fair stand-in for torch if it is as fast).

    python3 bench/torch_grouped.py RUN.json [--out RUN.torch.json] [--tolerance 0.10]
                                   [--budget-ms 150] [--dry-run]

What it rebuilds from each row group (the JSON's `expert_rows`: rows of each expert, in order):
  A     [rows, K] bf16, random normal: the rows in expert order, already gathered, as the arm
        reads them (the gather is charged to neither)
  W     [E, N, K] bf16, random normal (sigma 0.02), passed as W.transpose(1, 2): K-major B, the
        layout the arm reads
  offs  int32 cumulative row ends of the E experts (empty experts are empty groups)
gate_up is timed two ways: `fused` (one call over [E, 2*inter, K], how MoE layers usually hold
gate and up) and `per-projection` (two calls of N = inter, the grouping the arm runs); the verdict
uses the faster. down is one call. The weights rotate over copies so that a pass streams >= 4x the
L2 (as the bench does); each call is timed inside a CUDA graph of back-to-back calls (falling back
to plain CUDA events when capture fails), the median over samples. The arm's time is its row's
`median_us`. ratio = arm / torch; within tolerance when ratio <= 1 + tolerance (an arm faster than
torch is a stronger opponent, and is flagged when more than the tolerance faster). metrale / torch
is printed beside it when the JSON has a metrale row (issue 8: never slower than bf16).

--dry-run parses and prints what would be timed, without torch or a GPU.
"""
import argparse
import datetime
import json
import math
import statistics
import sys

ARM = "bf16-grouped (CUTLASS)"
OURS = "metrale"
GROUPED_OPS = ("gate_up", "down")
COLD_L2_MULTIPLE = 4
MAX_COPIES = 64
MEMORY_MARGIN = 2 << 30
TARGET_SAMPLE_US = 2000.0
WEIGHT_STDDEV = 0.02


# ---- parsing and verdicts (no torch) --------------------------------------------------------------


def load_bench(path):
    """(metadata, rows) of a `metrale bench --json` file."""
    with open(path) as f:
        doc = json.load(f)
    if not isinstance(doc, dict) or not isinstance(doc.get("rows"), list):
        raise ValueError(f"{path}: not a `metrale bench --json` file (no 'rows' list)")
    return doc.get("metadata", {}), doc["rows"]


def comparison_groups(rows, arm=ARM):
    """One entry per (model, op, tokens) of a grouped op that has an arm row: the shape, the
    routing (expert_rows), the arm's and metrale's times, and why it cannot be compared if so."""
    groups = {}
    order = []
    for r in rows:
        if r.get("op") not in GROUPED_OPS:
            continue
        key = (r.get("model"), r.get("op"), r.get("tokens"))
        if key not in groups:
            groups[key] = {"rows_of": {}}
            order.append(key)
        groups[key]["rows_of"][r.get("impl")] = r
    out = []
    for key in order:
        by_impl = groups[key]["rows_of"]
        if arm not in by_impl:
            continue
        a = by_impl[arm]
        g = {
            "model": key[0],
            "op": key[1],
            "tokens": key[2],
            "rows": a.get("rows"),
            "n": a.get("n"),
            "k": a.get("k"),
            "projections": a.get("projections", 1),
            "experts": a.get("experts"),
            "experts_active": a.get("experts_active"),
            "expert_rows": a.get("expert_rows"),
            "arm_us": a.get("median_us") if a.get("status") == "ok" else None,
            "arm_kernel": a.get("kernel"),
            "metrale_us": None,
            "skip": None,
        }
        ours = by_impl.get(OURS)
        if ours is not None and ours.get("status") == "ok":
            g["metrale_us"] = ours.get("median_us")
        if a.get("status") != "ok":
            g["skip"] = f"the arm's row did not run: {a.get('error', 'no error recorded')}"
        elif not isinstance(g["expert_rows"], list) or len(g["expert_rows"]) != g["experts"]:
            g["skip"] = ("the row has no expert_rows of length experts (a bench JSON older than "
                         "the bf16-grouped arm?): the routing cannot be rebuilt")
        elif sum(g["expert_rows"]) != g["rows"]:
            g["skip"] = f"expert_rows sum to {sum(g['expert_rows'])}, not rows = {g['rows']}"
        out.append(g)
    return out


def row_ends(expert_rows):
    """torch._grouped_mm's offs: the cumulative end row of each expert."""
    ends, total = [], 0
    for count in expert_rows:
        total += count
        ends.append(total)
    return ends


def forms(group):
    """The torch calls timed for a group: name -> list of N per call (one call per entry)."""
    n, p = group["n"], group["projections"]
    if p == 1:
        return {"single": [n]}
    return {"fused": [p * n], "per-projection": [n] * p}


def verdict(arm_us, torch_us, tolerance):
    """(ratio, within, words): ratio = arm / torch."""
    ratio = arm_us / torch_us
    within = ratio <= 1.0 + tolerance
    if not within:
        words = f"SLOWER than torch by {100 * (ratio - 1):.1f} % (> {100 * tolerance:.0f} %)"
    elif ratio < 1.0 - tolerance:
        words = f"within (faster than torch by {100 * (1 - ratio):.1f} %)"
    else:
        words = "within"
    return ratio, within, words


def rotation_copies(weight_bytes, l2_bytes, free_bytes):
    """Weight copies so that one pass streams >= COLD_L2_MULTIPLE x L2, within free memory."""
    want = max(2, math.ceil(COLD_L2_MULTIPLE * l2_bytes / max(weight_bytes, 1)))
    fit = (free_bytes - MEMORY_MARGIN) // max(weight_bytes, 1)
    return int(max(1, min(want, MAX_COPIES, fit)))


def summary_lines(results, tolerance):
    lines = [
        f"{'model':<20} {'op':<7} {'T':>6} {'rows':>7} {'torch us':>10} {'form':<15} "
        f"{'arm us':>10} {'arm/torch':>9} {'metrale/torch':>13}  verdict (tolerance "
        f"{100 * tolerance:.0f} %)"
    ]
    for r in results:
        head = f"{r['model']:<20} {r['op']:<7} {r['tokens']:>6} {r['rows']:>7}"
        if r.get("skip"):
            lines.append(f"{head} not compared: {r['skip']}")
            continue
        ours = r.get("metrale_ratio")
        lines.append(
            f"{head} {r['torch_us']:>10.1f} {r['torch_form']:<15} {r['arm_us']:>10.1f} "
            f"{r['ratio']:>9.3f} {'-' if ours is None else f'{ours:.3f}':>13}  {r['verdict']}"
        )
    compared = [r for r in results if not r.get("skip")]
    within = sum(1 for r in compared if r["within_tolerance"])
    lines.append(f"{within} of {len(compared)} compared rows within {100 * tolerance:.0f} % of torch")
    return lines


# ---- timing (torch) -----------------------------------------------------------------------------


def time_calls(torch, call, copies, budget_ms):
    """Median microseconds per call(i) (i selects the weight copy), graph replay when possible."""
    stream = torch.cuda.current_stream()
    call(0)
    torch.cuda.synchronize()
    start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record(stream)
    for i in range(copies):
        call(i)
    stop.record(stream)
    stop.synchronize()
    pilot_us = max(1e3 * start.elapsed_time(stop) / copies, 0.5)
    iterations = max(1, round(TARGET_SAMPLE_US / pilot_us))
    iterations = (iterations + copies - 1) // copies * copies
    samples = int(min(40, max(3, budget_ms * 1e3 / (iterations * pilot_us))))

    graph, timing = None, "graph"
    try:
        graph = torch.cuda.CUDAGraph()
        side = torch.cuda.Stream()
        side.wait_stream(stream)
        with torch.cuda.stream(side):
            for i in range(copies):  # warm-up on a side stream, as torch's graph docs ask
                call(i)
        stream.wait_stream(side)
        with torch.cuda.graph(graph):
            for i in range(iterations):
                call(i)
        graph.replay()
    except Exception as e:  # capture not possible: time with events
        graph, timing = None, f"events (graph capture failed: {type(e).__name__}: {e})"
    torch.cuda.synchronize()

    per_call = []
    for _ in range(samples):
        start.record(stream)
        if graph is not None:
            graph.replay()
        else:
            for i in range(iterations):
                call(i)
        stop.record(stream)
        stop.synchronize()
        per_call.append(1e3 * start.elapsed_time(stop) / iterations)
    return statistics.median(per_call), timing


def time_group(torch, group, budget_ms):
    """Times every form of the group; returns {form: (us, timing)} and the copies used."""
    dev = torch.device("cuda")
    rows, k, e = group["rows"], group["k"], group["experts"]
    gen = torch.Generator(device=dev).manual_seed(1)
    a = torch.randn(rows, k, device=dev, dtype=torch.bfloat16, generator=gen)
    offs = torch.tensor(row_ends(group["expert_rows"]), device=dev, dtype=torch.int32)
    props = torch.cuda.get_device_properties(dev)
    results, copies_used = {}, 0
    for form, ns in forms(group).items():
        weight_bytes = sum(e * n * k * 2 for n in ns)
        free, _ = torch.cuda.mem_get_info()
        copies = rotation_copies(weight_bytes, props.L2_cache_size, free)
        copies_used = max(copies_used, copies)
        weights = [
            [
                torch.randn(e, n, k, device=dev, dtype=torch.bfloat16, generator=gen)
                .mul_(WEIGHT_STDDEV)
                .transpose(1, 2)
                for n in ns
            ]
            for _ in range(copies)
        ]

        def call(i, weights=weights):
            for w in weights[i % len(weights)]:
                torch._grouped_mm(a, w, offs=offs)  # out: [rows, N] bf16

        results[form] = time_calls(torch, call, copies, budget_ms)
        del weights, call
        torch.cuda.empty_cache()
    return results, copies_used


def run(args):
    metadata, rows = load_bench(args.json)
    groups = comparison_groups(rows)
    if not groups:
        print(f"torch_grouped: {args.json} has no '{ARM}' rows: run `metrale bench` from a CUTLASS "
              "build (the arm is in its default set, or --impls metrale,bf16-grouped)")
        return 1
    if args.dry_run:
        for g in groups:
            calls = ", ".join(f"{form}: N={ns}" for form, ns in forms(g).items())
            state = g["skip"] or f"arm {g['arm_us']} us"
            print(f"{g['model']} {g['op']} T={g['tokens']} rows={g['rows']} K={g['k']} "
                  f"E={g['experts']} [{calls}] - {state}")
        return 0

    import torch

    if not torch.cuda.is_available():
        print("torch_grouped: torch sees no CUDA device")
        return 1
    results = []
    for g in groups:
        r = {key: g[key] for key in g if key != "expert_rows"}
        if not g["skip"]:
            timed, copies = time_group(torch, g, args.budget_ms)
            form, (torch_us, timing) = min(timed.items(), key=lambda item: item[1][0])
            ratio, within, words = verdict(g["arm_us"], torch_us, args.tolerance)
            r.update({
                "torch": {f: {"median_us": us, "timing": t} for f, (us, t) in timed.items()},
                "torch_us": torch_us,
                "torch_form": form,
                "torch_weight_copies": copies,
                "ratio": ratio,
                # issue 8's bar for our kernels: never slower than the bf16 grouped GEMM
                "metrale_ratio": g["metrale_us"] / torch_us if g["metrale_us"] else None,
                "within_tolerance": within,
                "verdict": words,
            })
        results.append(r)
        print(summary_lines([r], args.tolerance)[1], flush=True)

    lines = summary_lines(results, args.tolerance)
    print("\n" + "\n".join(lines))
    doc = {
        "metadata": {
            "tool": "bench/torch_grouped.py",
            "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "bench_json": args.json,
            "bench_commit": metadata.get("commit"),
            "bench_gpu": metadata.get("gpu", {}).get("name"),
            "gpu": torch.cuda.get_device_name(),
            "torch": torch.__version__,
            "torch_cuda": torch.version.cuda,
            "tolerance": args.tolerance,
            "budget_ms_per_measurement": args.budget_ms,
            "arm": ARM,
        },
        "rows": results,
    }
    out = args.out or (args.json[:-5] if args.json.endswith(".json") else args.json) + ".torch.json"
    with open(out, "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")
    print(f"wrote {out}")
    return 0


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("json", help="a `metrale bench --json` file with bf16-grouped rows")
    parser.add_argument("--out", help="where to write the comparison (default RUN.torch.json)")
    parser.add_argument("--tolerance", type=float, default=0.10,
                        help="the arm may be this much slower than torch (default 0.10)")
    parser.add_argument("--budget-ms", type=float, default=150.0,
                        help="measured time per torch form and shape (default 150)")
    parser.add_argument("--dry-run", action="store_true",
                        help="print what would be timed; needs neither torch nor a GPU")
    return run(parser.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
