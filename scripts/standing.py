#!/usr/bin/env python3
"""Where metrale stands on one recorded sweep: the open issues' targets, row by row, as markdown.

Reads a `metrale bench --json` sweep (bench/results/*.json) and, optionally, its `--skew 1.5`
companion, and prints one table per issue with each row's value and whether it meets the target:
  decode (issue 7): gate_up and down at T = 1, 8, 64, % of the floor (T = 1 of the Qwen3 presets:
    the floor + 5 µs), and against Humming 0.1.20's time;
  prefill (issue 8): T = 512, 4096, 16384, % of the floor, against Humming and against the
    bf16-grouped (CUTLASS) arm where the sweep has it; the dense GEMM against cuBLASLt; pack;
  the MoE layer (issue 9): its time over its two grouped calls' on its routing, and its launches
    (the bench's own verdicts, the `moe` fields of its rows).
The thresholds are the issues' (the ones ../shared/tools/check_targets.py applies); Humming's
times are read from that script when it is there (else the column is left out). Unlike that
script, which takes the newest row of every sweep, this reads one sweep: a snapshot.

    python3 scripts/standing.py bench/results/2026-12-07_h200_v112_sweep_3042423.json \\
        bench/results/2026-12-07_h200_v112_sweep_skew_3042423.json
"""
import argparse
import ast
import json
import os

HERE = os.path.dirname(os.path.abspath(__file__))
CHECK_TARGETS = os.path.join(HERE, "..", "..", "shared", "tools", "check_targets.py")


def humming_times(path):
    """check_targets.py's HUMMING table ("model|op|T" -> µs), or {} where it cannot be read."""
    try:
        tree = ast.parse(open(path).read())
    except (OSError, SyntaxError):
        return {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(
                isinstance(t, ast.Name) and t.id == "HUMMING" for t in node.targets):
            return ast.literal_eval(node.value)
    return {}


def load_rows(path):
    data = json.load(open(path))
    return data["metadata"], [r for r in data["rows"] if r.get("status") == "ok"]


def mark(ok):
    return "yes" if ok else "**no**"


def grouped_table(rows, humming, tokens, need_of, arm_of=None):
    """One line per (model, op, T): µs, % of the floor against its need, Humming, the arm."""
    head = "| preset | op | T | µs | % of floor (target) | met | Humming µs | faster |"
    if arm_of:
        head += " bf16-grouped (CUTLASS) µs | not slower |"
    lines = [head, "|" + "---|" * (head.count("|") - 1)]
    met = total = 0
    for r in rows:
        if (r["impl"] != "metrale" or r["op"] not in ("gate_up", "down")
                or r["tokens"] not in tokens):
            continue
        need, kind = need_of(r)
        ok = r["pct_floor"] >= need if kind == "pct" else r["median_us"] <= r["floor_us"] + need
        target = f"{need} %" if kind == "pct" else f"floor {r['floor_us']:.1f} + {need} µs"
        cells = [r["model"], r["op"], str(r["tokens"]), f"{r['median_us']:.1f}",
                 f"{r['pct_floor']:.1f} ({target})", mark(ok)]
        h = humming.get(f"{r['model']}|{r['op']}|{r['tokens']}")
        faster = h is None or r["median_us"] < h
        cells += [f"{h}" if h else "-", mark(faster) if h else "-"]
        oks = [ok, faster]
        if arm_of:
            arm = arm_of(r)
            cells += [f"{arm:.1f}" if arm else "-",
                      mark(r["median_us"] <= arm) if arm else "-"]
            oks.append(arm is None or r["median_us"] <= arm)
        total += 1
        met += all(oks)
        lines.append("| " + " | ".join(cells) + " |")
    lines.append(f"\n{met} of {total} rows meet every target of their line.")
    return lines


def dense_table(rows):
    lt = {(r["model"], r["tokens"]): r["median_us"] for r in rows
          if r["op"] == "dense" and r["impl"] == "cuBLASLt"}
    lines = ["| preset | M | metrale µs | cuBLASLt µs | cuBLASLt / metrale (target 0.9) | met "
             "| plan |",
             "|---|---|---|---|---|---|---|"]
    met = total = 0
    for r in rows:
        if r["op"] != "dense" or r["impl"] != "metrale" or (r["model"], r["tokens"]) not in lt:
            continue
        ratio = lt[(r["model"], r["tokens"])] / r["median_us"]
        total += 1
        met += ratio >= 0.9
        lines.append(f"| {r['model']} | {r['tokens']} | {r['median_us']:.1f} | "
                     f"{lt[(r['model'], r['tokens'])]:.1f} | {ratio:.2f} | {mark(ratio >= 0.9)} | "
                     f"{r.get('kernel', '')} |")
    lines.append(f"\n{met} of {total} dense rows at 0.9x cuBLASLt or better.")
    return lines


def pack_table(rows):
    lines = ["| preset | weight | µs | % of the copy ceiling (target 70) | met |",
             "|---|---|---|---|---|"]
    for r in rows:
        if r["op"] == "pack" and r["impl"] == "metrale":
            lines.append(f"| {r['model']} | {r['note'].split(',')[0]} | {r['median_us']:.1f} | "
                         f"{r['pct_floor']:.1f} | {mark(r['pct_floor'] >= 70)} |")
    return lines


def moe_table(rows):
    lines = ["| preset | T | layer µs | gate_up + down µs | ratio (target) | met "
             "| launches (target 4) "
             "| met |", "|---|---|---|---|---|---|---|---|"]
    ratios = launched = total = 0
    for r in rows:
        if r["op"] != "moe" or r["impl"] != "metrale" or "moe" not in r:
            continue
        m = r["moe"]
        ratio = m.get("layer_over_grouped")
        if ratio is None:
            continue
        counted = m.get("launches") or {}
        launches = sum(counted.get(n, 0) for n in ("kernels", "memsets", "other_nodes"))
        ratio_ok, launches_ok = bool(m.get("meets_target")), bool(counted.get("meets_target"))
        total += 1
        ratios += ratio_ok
        launched += launches_ok
        lines.append(f"| {r['model']} | {r['tokens']} | {r['median_us']:.1f} | "
                     f"{m['grouped_sum_us']:.1f} | {ratio:.3f} ({m.get('target')}) | "
                     f"{mark(ratio_ok)} | {launches} | {mark(launches_ok)} |")
    lines.append(f"\n{ratios} of {total} layer rows meet their ratio, "
                 f"{launched} their launch count.")
    return lines


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("sweep")
    parser.add_argument("skew", nargs="?", help="the sweep's --skew 1.5 companion")
    parser.add_argument("--humming", default=CHECK_TARGETS,
                        help="check_targets.py (Humming's times)")
    args = parser.parse_args()
    meta, rows = load_rows(args.sweep)
    humming = humming_times(args.humming)
    qwen = lambda r: "qwen3" in r["model"].lower()
    print(f"Sweep: `{os.path.basename(args.sweep)}`, {meta.get('gpu', {}).get('name')}, "
          f"commit {meta.get('commit')}, {meta.get('date')}.\n")

    print("**Decode (issue 7).**\n")
    decode_need = lambda r: ((5, "us") if r["tokens"] == 1 and qwen(r)
                             else (65 if r["tokens"] == 1 else 75, "pct"))
    print("\n".join(grouped_table(rows, humming, (1, 8, 64), decode_need)))
    if args.skew:
        _, skewed = load_rows(args.skew)
        print("\nSkewed routing (`--skew 1.5`), T = 64, target 65 % of the floor:\n")
        print("\n".join(grouped_table([r for r in skewed if "deepseek" in r["model"].lower()],
                                      {}, (64,), lambda r: (65, "pct"))))

    print("\n**Prefill (issue 8).**\n")
    arms = {(r["model"], r["op"], r["tokens"]): r["median_us"] for r in rows
            if "bf16" in r["impl"].lower() and "cutlass" in r["impl"].lower()}
    prefill_need = lambda r: (50 if r["tokens"] == 512 else 80, "pct")
    arm_of = (lambda r: arms.get((r["model"], r["op"], r["tokens"]))) if arms else None
    print("\n".join(grouped_table(rows, humming, (512, 4096, 16384), prefill_need, arm_of)))
    if not arms:
        print("\n(This sweep has no bf16-grouped (CUTLASS) arm: built without CUTLASS.)")
    print("\nThe dense bf16 GEMM:\n")
    print("\n".join(dense_table(rows)))
    print("\nPack (`pack_bf16_weight_to_nvfp4_t`'s recipe with scale_2 computed: two passes):\n")
    print("\n".join(pack_table(rows)))

    print("\n**The MoE layer (issue 9).** Target: at most 1.15x the two grouped calls' time on the "
          "layer's routing (1.10x from T = 64), at most 4 launches.\n")
    print("\n".join(moe_table(rows)))


if __name__ == "__main__":
    main()
