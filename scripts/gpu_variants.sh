#!/usr/bin/env bash
# Code variants measured in one GPU call. The base revision is built once; each variant's files
# that differ are laid over that tree and rebuilt incrementally (a decode header rebuilds in
# ~15 s on the H200 machine's 16 cores, where a fresh tree takes ~45 s); then `metrale bench`
# runs once per variant and round, alternating, and a table gives each row's best median against
# the base's, with the geomean. Machines of one kind differ by up to ~5 % between calls, so
# variants are compared within one call (docs/perf.md, "2026-12-03, third session").
#
# On the CPU machine, pack the revisions (the base first):
#   scripts/gpu_variants.sh pack BASE_REV VARIANT_REV...
# which writes .variants/NN-<short hash>.tar.gz (each revision's tree without docs/ and
# bench/results/); .variants/ is ignored by git, so name it in the device call's `carry`. Then,
# on the GPU machine:
#   scripts/gpu_variants.sh run OUTDIR [BENCH_ARGS...]
#   e.g. scripts/gpu_variants.sh run "$OUT" --model all --tokens 1,8,64 --ops gate_up,down
# BENCH_ARGS must not name --json or --commit (each run gets its own). ROUNDS=N (default 2);
# REUSE=1 keeps the variants' binaries from an earlier run on the same machine. Then
#   scripts/gpu_variants.sh test OUTDIR GTEST_FILTER
# builds and runs the GPU tests of the last variant packed, in the tree `run` left.
# Order: one discarded warm-up run of the base first, then the rounds, every other one in reverse
# (A B C, C B A, ...), so that no variant always runs first (or first after the build's idle
# minutes). What a ratio must beat (H100, docs/perf.md, twenty-sixth session): two byte-identical
# binaries in this order, four rounds, geomean 0.995 over ten T = 4096 rows, rows 0.946-1.041.
# The bench's NVFP4 rows read prepacked weights unless BENCH_ARGS say --weights packed.
# OUTDIR/table.txt (with the base's spread over its rounds: the noise a ratio must beat), build.log,
# and per variant (up to six) a JSON of its rows at their best round.
# Into bench/results go the table and the JSONs of main's code only: check_targets.py reads every
# JSON there and the newest file wins a row, so a variant that was not merged must not leave one.
set -uo pipefail
cd "$(dirname "$0")/.."
REPO=$PWD
PACKS=$REPO/.variants

usage() {
  echo "usage: scripts/gpu_variants.sh pack BASE_REV VARIANT_REV... | run OUTDIR [BENCH_ARGS...]" \
    "| test OUTDIR GTEST_FILTER" >&2
  exit 2
}

pack() {
  (($# >= 2)) || usage
  rm -rf "$PACKS" && mkdir -p "$PACKS"
  local i=0 rev hash
  for rev in "$@"; do
    hash=$(git rev-parse --short "$rev") || exit 1
    git archive --format=tar.gz -o "$PACKS/$(printf '%02d' "$i")-$hash.tar.gz" "$hash" -- . \
      ':!docs' ':!bench/results' || exit 1
    i=$((i + 1))
  done
  ls -l "$PACKS"
}

# Lays tree $1 over tree $2: copies the files that differ, removes those $1 lacks (build outputs
# under build/ are left alone), so that the next build recompiles only what changed.
overlay() {
  local from=$1 to=$2 f
  (cd "$from" && find . -type f) | while read -r f; do
    cmp -s "$from/$f" "$to/$f" || { mkdir -p "$(dirname "$to/$f")" && cp "$from/$f" "$to/$f"; }
  done
  (cd "$to" && find . -path ./build -prune -o -type f -print) | while read -r f; do
    [[ -e $from/$f ]] || rm -f "$to/$f"
  done
}

run() {
  (($# >= 1)) || usage
  local out
  out=$(mkdir -p "$1" && cd "$1" && pwd)
  shift
  local packs=("$PACKS"/*.tar.gz)
  [[ -e ${packs[0]} ]] || { echo "no packs in $PACKS: run 'pack' first and carry .variants" >&2; exit 2; }
  source scripts/gpu_build.sh
  local work=/tmp/variants tree=/tmp/variants/tree names=() name pack
  # REUSE=1: a second run in the same machine session keeps the binaries built by the first.
  if [[ ${REUSE:-0} == 1 ]]; then rm -f "$work"/*.json "$work"/*.log; else rm -rf "$work"; fi
  mkdir -p "$tree"
  for pack in "${packs[@]}"; do
    name=$(basename "$pack" .tar.gz)
    name=${name#*-}
    names+=("$name")
    [[ ${REUSE:-0} == 1 && -x $work/bin/$name/metrale ]] && continue
    mkdir -p "$work/src/$name" "$work/bin/$name"
    tar -xzf "$pack" -C "$work/src/$name"
    overlay "$work/src/$name" "$tree"
    if ! (cd "$tree" && release_build "$out/build.log" --target metrale_cli); then
      echo "build of $name failed:" && grep -m 20 -E "error|FAILED" "$out/build.log"
      exit 1
    fi
    cp "$tree/build/release/bin/metrale" "$work/bin/$name/"
    echo "built $name ($SECONDS s)"
  done
  local round
  "$work/bin/${names[0]}/metrale" bench --impls metrale "$@" >"$work/warmup.log" 2>&1 ||
    echo "warm-up run failed: $(tail -3 "$work/warmup.log")"
  for round in $(seq 1 "${ROUNDS:-2}"); do
    for name in $(round_order "$round" "${names[@]}"); do
      "$work/bin/$name/metrale" bench --impls metrale --commit "$name" "$@" \
        --json "$work/$name.$round.json" >"$work/$name.$round.log" 2>&1 ||
        echo "bench $name round $round failed: $(tail -3 "$work/$name.$round.log")"
    done
  done
  python3 - "$out" "$work" "${names[@]}" <<'PY' | tee "$out/table.txt"
import glob, json, math, os, sys
out, work, names = sys.argv[1], sys.argv[2], sys.argv[3:]
def measured(r):  # a row of ours that ran
    return r.get("status") == "ok" and r["impl"] in ("metrale", "metrale-cpu")
best = {}  # name -> (model, op, T) -> the row of the round with the best median
medians = {}  # name -> (model, op, T) -> every round's median
weights = set()  # the NVFP4 weights' layout the runs read (the bench's --weights)
for name in names:
    for path in sorted(glob.glob(os.path.join(work, f"{name}.*.json"))):
        run = json.load(open(path))
        weights.add(run.get("metadata", {}).get("metrale_weights", "?"))
        for r in run["rows"]:
            if measured(r):
                key = (r["model"], r["op"], r["tokens"])
                medians.setdefault(name, {}).setdefault(key, []).append(r["median_us"])
                old = best.setdefault(name, {}).get(key)
                if old is None or r["median_us"] < old["median_us"]:
                    best[name][key] = r
base = best.get(names[0], {})
# The base's spread: its slowest round over its best, per row. A variant's ratio inside it is
# not told apart from the rounds' own noise (a row's rounds differed by up to 5 % in one call:
# docs/perf.md, 2026-12-04, sixteenth session).
def spread(key):
    m = medians.get(names[0], {}).get(key, [])
    return max(m) / min(m) - 1 if len(m) > 1 else None
print(f"best median us of each row over the rounds; the variants as a ratio to {names[0]}; "
      f"spread: {names[0]}'s slowest round over its best; NVFP4 weights "
      + " / ".join(sorted(weights)))
print(f"{'model':20s} {'op':8s} {'T':>6s} {names[0]:>10s} " + " ".join(f"{n:>9s}" for n in names[1:])
      + f" {'spread':>7s}")
logs = {n: [] for n in names[1:]}
spreads = []
for key in sorted(base):
    cells = []
    for n in names[1:]:
        r = best.get(n, {}).get(key)
        ratio = r["median_us"] / base[key]["median_us"] if r else None
        cells.append(f"{ratio:9.3f}" if ratio else f"{'-':>9s}")
        if ratio:
            logs[n].append(math.log(ratio))
    s = spread(key)
    if s is not None:
        spreads.append(s)
    print(f"{key[0]:20s} {key[1]:8s} {key[2]:6d} {base[key]['median_us']:10.2f} " + " ".join(cells)
          + (f" {100 * s:6.1f}%" if s is not None else f" {'-':>7s}"))
print(f"{'geomean':37s}" + " ".join(
    f"{math.exp(sum(l) / len(l)):9.3f}" if l else f"{'-':>9s}" for l in logs.values())
      + (f" {100 * sum(spreads) / len(spreads):6.1f}% (mean)" if spreads else ""))
# Each variant's JSON (up to six): the first round's, every measured row replaced by the row of
# its best round, so that a recorded JSON says what the table says (a single round's medians
# moved check_targets' comparisons across their lines: docs/perf.md, 2026-12-03, ninth session).
def best_rows(name):
    j = json.load(open(os.path.join(work, f"{name}.1.json")))
    rows = best.get(name, {})
    j["rows"] = [rows.get((r["model"], r["op"], r["tokens"]), r) if measured(r) else r
                 for r in j["rows"]]
    return j
for name in names if len(names) <= 6 else []:
    if os.path.exists(os.path.join(work, f"{name}.1.json")):
        with open(os.path.join(out, f"{name}.json"), "w") as f:
            json.dump(best_rows(name), f, indent=1)
PY
}

# The GPU tests of the last variant packed (the tree `run` leaves is that variant's): its
# metrale_test_cuda built there (incrementally) and run with GTEST_FILTER; OUTDIR gets
# tests_build.log and tests.log.
test_tree() {
  (($# == 2)) || usage
  local out tree=/tmp/variants/tree
  out=$(mkdir -p "$1" && cd "$1" && pwd)
  [[ -d $tree ]] || { echo "no variants' tree: run 'run' first" >&2; exit 2; }
  source scripts/gpu_build.sh
  cd "$tree" && release_build "$out/tests_build.log" --target metrale_test_cuda &&
    build/release/bin/metrale_test_cuda --gtest_filter="$2" >"$out/tests.log" 2>&1
}

case ${1:-} in
  pack) shift && pack "$@" ;;
  run) shift && run "$@" ;;
  test) shift && test_tree "$@" ;;
  *) usage ;;
esac
