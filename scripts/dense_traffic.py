#!/usr/bin/env python3
"""What a dense bf16 GEMM's grid moves, tile by tile: the arithmetic beside forced-tile rows.

For out[M, N] = act[M, K] · weight[N, K]ᵀ cut into the tiled family's CTA-synchronised tiles
(their token and weight-row counts read from src/cuda/sm90/tiled/tiled_params.hpp's kTiles) and K
ranges, prints per (tile, ranges): the CTAs, their waves on the multiprocessors at one CTA each,
the k-tiles of 64 a CTA runs, the bytes L2 sends the SMs (each row tile reads every weight row,
each channel tile every activation row), the bytes a CTA pulls, the workspace or cluster sums of
the K ranges, and the bytes DRAM must serve at least (each operand once, the output written).
No timing model: these are the quantities to set beside measured rows (docs/perf.md, forty-sixth
session).

    python3 scripts/dense_traffic.py 64 4096 7168           # DeepSeek-V3's dense GEMM at M = 64
    python3 scripts/dense_traffic.py 512 1536 2048 --tiles 3 6 --splits 1 2
"""
import argparse
import math
import os
import re

HERE = os.path.dirname(os.path.abspath(__file__))
PARAMS = os.path.join(HERE, "..", "src", "cuda", "sm90", "tiled", "tiled_params.hpp")
K_TILE = 64
BF16 = 2


def cta_synchronised_tiles(path=PARAMS):
    """kTiles' CTA-synchronised entries without NVFP4 variants: index -> (tokens, weight rows)."""
    text = open(path).read()
    table = text[text.index("constexpr TileConfig kTiles[] = {"):]
    table = table[:table.index("};")]
    tiles = {}
    for i, entry in enumerate(re.findall(r"\{([^{}]*)\}", table)):
        fields = [f.strip() for f in entry.split(",")]
        tokens, rows, specialized = int(fields[0]), int(fields[1]), fields[3] == "true"
        variant = int(fields[5]) > 0 or "true" in fields[6:]
        if not specialized and not variant:
            tiles[i] = (tokens, rows)
    return tiles


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("m", type=int)
    parser.add_argument("n", type=int)
    parser.add_argument("k", type=int)
    parser.add_argument("--tiles", type=int, nargs="*", help="kTiles indices (default: all)")
    parser.add_argument("--splits", type=int, nargs="*", default=[1, 2, 4, 8])
    parser.add_argument("--sms", type=int, default=132)
    args = parser.parse_args()
    tiles = cta_synchronised_tiles()
    chosen = args.tiles or sorted(tiles)
    k_tiles = math.ceil(args.k / K_TILE)
    mb = 1e6
    weights, act, out = args.n * args.k * BF16, args.m * args.k * BF16, args.m * args.n * BF16
    print(f"M = {args.m}, N = {args.n}, K = {args.k} ({k_tiles} k-tiles): weights "
          f"{weights / mb:.1f} MB, activations {act / mb:.1f} MB, output {out / mb:.1f} MB; "
          f"DRAM at least {(weights + act + out) / mb:.1f} MB")
    print(f"{'tile':>4} {'tok x rows':>10} {'ranges':>6} {'CTAs':>6} {'waves':>6} "
          f"{'k-tiles':>7} {'L2->SM MB':>9} {'KB a CTA':>8} {'sums MB':>7}")
    for t in chosen:
        if t not in tiles:
            print(f"{t:>4} (not a CTA-synchronised bf16 tile)")
            continue
        tokens, rows = tiles[t]
        row_tiles, channel_tiles = math.ceil(args.m / tokens), math.ceil(args.n / rows)
        for s in args.splits:
            ctas = row_tiles * channel_tiles * s
            per_cta = math.ceil(k_tiles / s)
            through_l2 = row_tiles * weights + channel_tiles * act
            # (the rows past M or N are TMA's zeros: not read)
            cta_bytes = per_cta * K_TILE * BF16 * (min(tokens, args.m) + min(rows, args.n))
            # Each range but one leaves a tile of fp32 sums, which another reads back.
            sums = 2 * row_tiles * channel_tiles * (s - 1) * tokens * rows * 4
            print(f"{t:>4} {f'{tokens} x {rows}':>10} {s:>6} {ctas:>6} "
                  f"{ctas / args.sms:>6.2f} {per_cta:>7} {through_l2 / mb:>9.1f} "
                  f"{cta_bytes / 1e3:>8.0f} {sums / mb:>7.1f}")


if __name__ == "__main__":
    main()
