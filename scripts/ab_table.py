#!/usr/bin/env python3
"""The table of a variant A/B run by a device call script (docs/gpu-runs/*/call*.sh).

FOLDER holds bench JSONs named <variant letter><round>.json (A1.json, B2.json, ...) and L.json
(cuBLASLt). Prints each row's (model, tokens) best median of variant A in microseconds, every
other variant's best over A's, cuBLASLt's over A's, and A's plan, then each variant's geometric
mean over the rows both ran; then the plans of the variants named by --labels.

    python3 scripts/ab_table.py FOLDER --variants BCDEFG --labels BF
"""
import argparse
import glob
import json
import math
import os
import signal


def best_rows(folder):
    best, label = {}, {}
    for path in glob.glob(os.path.join(folder, "*.json")):
        variant = os.path.basename(path)[0]
        try:
            rows = json.load(open(path))["rows"]
        except (OSError, ValueError, KeyError, TypeError):  # not a bench JSON
            continue
        for r in rows:
            if r.get("status") != "ok":
                continue
            key = (variant, (r["model"][:12], r["tokens"]))
            if r["median_us"] < best.get(key, float("inf")):
                best[key] = r["median_us"]
                label[key] = r.get("kernel", "")
    return best, label


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder")
    parser.add_argument("--variants", default="BCDEFG", help="the letters compared with A")
    parser.add_argument("--labels", default="", help="the letters whose plans are printed")
    args = parser.parse_args()
    best, label = best_rows(args.folder)
    rows = sorted({row for (_, row) in best})
    head = " ".join(f"{v:>6s}" for v in args.variants)
    print(f"{'model':12s} {'M':>5s} {'A tiles':>9s} {head}   L/A   A's plan")
    for row in rows:
        a = best.get(("A", row))
        if not a:
            continue
        cells = " ".join(
            f"{best[(v, row)] / a:6.3f}" if (v, row) in best else "     -" for v in args.variants)
        lt = best.get(("L", row))
        print(f"{row[0]:12s} {row[1]:5d} {a:9.2f} {cells} {lt / a if lt else 0:6.3f}   "
              f"{label[('A', row)]}")
    geomeans = []
    for v in args.variants:
        ratios = [best[(v, r)] / best[("A", r)] for r in rows if (v, r) in best and ("A", r) in best]
        geomeans.append(f"{math.exp(sum(map(math.log, ratios)) / len(ratios)):6.3f}"
                        if ratios else "     -")
    print(f"{'geomean':12s} {'':5s} {'':9s} {' '.join(geomeans)}")
    for row in rows:
        for v in args.labels:
            if (v, row) in label:
                print(v, row, label[(v, row)])


if __name__ == "__main__":
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)  # quiet under `| head`
    main()
