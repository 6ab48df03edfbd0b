#!/usr/bin/env python3
"""Where a kernel's warps wait, by SASS opcode and by instruction range, from an ncu report's
source page: ncu's own tables give the stall reasons of the whole kernel, not of its roles (a
warp-specialised kernel's producer and consumers share one kernel).

On the GPU machine (the .ncu-rep needs `--set full`, or at least the SourceCounters section):
  ncu --import REPORT.ncu-rep --page source --csv --print-source sass > sass.csv
Then anywhere:
  scripts/ncu_stalls.py sass.csv[.gz] [--ranges 400:900,4300:4768] [--top 20]

Prints the hottest instructions, the samples per opcode, and, for each range of instruction
indices (the rows of the CSV, in address order; find a role's range from the hottest
instructions), its share of the samples and its stall reasons. docs/perf.md, twenty-third
session, reads a tile-8 profile this way. `--body INDEX` counts a loop's body: the instructions
executed as often as instruction INDEX (within 1 %), by mnemonic, with their sum, which is what a
warp issues per iteration of the loop that holds INDEX (docs/perf.md, thirty-eighth session:
the decode kernel's stage).
"""
import argparse
import collections
import csv
import gzip
import re

SAMPLES = "Warp Stall Sampling (All Samples)"
EXECUTED = "Instructions Executed"


def number(text):
    return int(text) if text and text.strip().lstrip("-").isdigit() else 0


def mnemonic(source):
    """A SASS line's mnemonic without its predicate: `@!P1 IMAD.MOV.U32 R1, R2` -> IMAD.MOV.U32."""
    words = re.sub(r"^@!?U?P\w+\s+", "", source.strip()).split()
    return words[0] if words else "?"


def opcode(source):
    """The opcode of a SASS line without its predicate and modifiers: `@!P1 BRA x` -> BRA."""
    return mnemonic(source).split(".")[0]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("csv", help="ncu --page source --csv --print-source sass output (or .gz)")
    parser.add_argument("--ranges", default="", help="instruction index ranges, e.g. 400:900,4300:")
    parser.add_argument("--top", type=int, default=20, help="hottest instructions to list")
    parser.add_argument("--body", type=int, help="count the loop body holding this instruction")
    args = parser.parse_args()

    opener = gzip.open if args.csv.endswith(".gz") else open
    with opener(args.csv, "rt", newline="") as f:
        rows = list(csv.reader(f))
    header_at = next(i for i, r in enumerate(rows) if SAMPLES in r)
    header, data = rows[header_at], rows[header_at + 1:]
    col = {name: i for i, name in enumerate(header)}
    reasons = [h for h in header if h.startswith("stall_") and "(" not in h]
    total = sum(number(r[col[SAMPLES]]) for r in data) or 1

    print(f"{len(data)} instructions, {total} samples")
    print(f"\nhottest {args.top}: index, % of samples, instruction, executed, main reasons")
    hottest = sorted(range(len(data)), key=lambda i: -number(data[i][col[SAMPLES]]))[:args.top]
    for i in sorted(hottest):
        r = data[i]
        s = number(r[col[SAMPLES]])
        main_reasons = ", ".join(f"{h[6:]} {number(r[col[h]])}" for h in reasons
                                 if number(r[col[h]]) > 0.2 * s)
        print(f"{i:6d} {100 * s / total:5.1f}%  {r[col['Source']].strip()[:56]:56s} "
              f"{number(r[col[EXECUTED]]):>12,}  {main_reasons}")

    def report(first, last, title):
        by_op = collections.defaultdict(lambda: [0, 0])
        by_reason = collections.Counter()
        for r in data[first:last]:
            entry = by_op[opcode(r[col["Source"]])]
            entry[0] += number(r[col[SAMPLES]])
            entry[1] += number(r[col[EXECUTED]])
            for h in reasons:
                by_reason[h[6:]] += number(r[col[h]])
        samples = sum(e[0] for e in by_op.values()) or 1
        stalls = sum(by_reason.values()) or 1
        print(f"\n{title}: {100 * samples / total:.1f} % of the samples")
        print("  reasons: " + ", ".join(f"{k} {100 * v / stalls:.0f}%"
                                        for k, v in by_reason.most_common() if v > 0.02 * stalls))
        for op, (s, ex) in sorted(by_op.items(), key=lambda kv: -kv[1][0])[:12]:
            print(f"  {op:10s} {100 * s / samples:5.1f}% of the range's samples, {ex:>14,} executed")

    report(0, len(data), "whole kernel")
    for part in filter(None, args.ranges.split(",")):
        first, _, last = part.partition(":")
        report(int(first or 0), int(last) if last else len(data), f"instructions {part}")
    if args.body is not None:
        if not 0 <= args.body < len(data):
            parser.error(f"--body {args.body}: the profile has instructions 0 to {len(data) - 1}")
        loop_body(data, col, args.body)


def loop_body(data, col, index):
    """The instructions executed as often as instruction `index`, by full mnemonic."""
    times = number(data[index][col[EXECUTED]])
    if times == 0:
        print(f"\ninstruction {index} never executed")
        return
    mnemonics = collections.Counter()
    for r in data:
        if abs(number(r[col[EXECUTED]]) - times) <= 0.01 * times:
            mnemonics[mnemonic(r[col["Source"]])] += 1
    print(f"\nloop body of instruction {index} (executed {times:,} times): "
          f"{sum(mnemonics.values())} instructions")
    for name, count in mnemonics.most_common():
        print(f"  {name:32s} {count:5d}")


if __name__ == "__main__":
    main()
