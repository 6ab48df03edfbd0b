#!/usr/bin/env bash
# Two or more kernel choices measured in one GPU call, on the same build, machine and clocks
# (machines of one kind differ by 5-10 % between calls, so an A/B across calls says little): build
# the release tree, then run `metrale bench` once per METRALE_CUDA_KERNEL value ('' = the
# dispatcher's own choice), alternating A, B, ..., A, B, ..., and print each row's times side by
# side, with each choice's time over A's. A choice written VARIABLE=VALUE sets that variable
# instead (e.g. METRALE_CUDA_QUANTIZER=lean for the quantizer); one of several words separated by
# spaces sets each ('sm90-tiled:15 METRALE_PREPACKED_LAYOUT=fragments'). The choices end at the
# first argument that starts with '-' (the bench's).
#
#   scripts/gpu_ab.sh OUTDIR KERNEL_A KERNEL_B [KERNEL_C ...] [BENCH_ARGS...]
#   e.g. scripts/gpu_ab.sh /tmp/ab sm90-tiled:4 sm90-tiled:6 --ops gate_up down --tokens 4096
#        scripts/gpu_ab.sh /tmp/ab METRALE_CUDA_QUANTIZER=proven METRALE_CUDA_QUANTIZER=lean \
#          --ops pack pack_unit
#
# OUTDIR/build.log, a1.json, b1.json, a2.json, b2.json, ... (and their .log); ROUNDS=N for N
# rounds. A discarded warm-up run of A comes first, and every other round runs in reverse order
# (A B, B A, ...), so that no choice always runs first (scripts/gpu_variants.sh has the noise a
# ratio must beat).
set -uo pipefail
cd "$(dirname "$0")/.."
if [[ $# -lt 3 ]]; then
  echo "usage: scripts/gpu_ab.sh OUTDIR KERNEL_A KERNEL_B [KERNEL_C ...] [BENCH_ARGS...]" >&2
  exit 2
fi
OUT=$(mkdir -p "$1" && cd "$1" && pwd)
shift
declare -A KERNEL
SIDES=()
for side in {a..z}; do
  [[ $# -gt 0 && $1 != -* ]] || break
  KERNEL[$side]=$1
  SIDES+=("$side")
  shift
done
source scripts/gpu_build.sh
if ! release_build "$OUT/build.log" --target metrale_cli; then
  grep -m 20 -E "error|FAILED" "$OUT/build.log"
  exit 1
fi
# bench_side SIDE [ARGS...]: one run of the bench under SIDE's choice.
bench_side() {
  local side=$1 word assignments=(METRALE_CUDA_KERNEL=)
  shift
  for word in ${KERNEL[$side]}; do
    [[ $word == *=* ]] && assignments+=("$word") || assignments+=("METRALE_CUDA_KERNEL=$word")
  done
  env "${assignments[@]}" build/release/bin/metrale bench --impls metrale "$@"
}
bench_side a "$@" >"$OUT/warmup.log" 2>&1 || echo "warm-up run failed: see $OUT/warmup.log"
for round in $(seq 1 "${ROUNDS:-2}"); do
  for side in $(round_order "$round" "${SIDES[@]}"); do
    bench_side "$side" "$@" --json "$OUT/$side$round.json" >"$OUT/$side$round.log" 2>&1 ||
      echo "bench $side$round failed: see $OUT/$side$round.log"
  done
done
names=()
for side in "${SIDES[@]}"; do names+=("$side=${KERNEL[$side]:-auto}"); done
python3 - "$OUT" "${names[@]}" <<'PY'
import glob, json, os, sys
out, names = sys.argv[1], dict(n.split("=", 1) for n in sys.argv[2:])
times = {}  # (model, op, T) -> side -> [median us per round]
notes = {}  # (model, op, T) -> side -> what ran (the row's kernel label, else its note)
weights = set()  # the NVFP4 weights' layout the runs read (the bench's --weights)
for path in sorted(glob.glob(os.path.join(out, "[a-z][0-9]*.json"))):
    side = os.path.basename(path)[0]
    run = json.load(open(path))
    weights.add(run.get("metadata", {}).get("metrale_weights", "?"))
    for r in run["rows"]:
        if r.get("status") != "ok" or r["impl"] != "metrale":
            continue
        key = (r["model"], r["op"], r["tokens"])
        times.setdefault(key, {}).setdefault(side, []).append(r["median_us"])
        notes.setdefault(key, {})[side] = r.get("kernel") or r.get("note", "")
print(", ".join(f"{s.upper()} = {n}" for s, n in names.items()) +
      ": median us per round; X/A = X's round mean over A's; NVFP4 weights " +
      " / ".join(sorted(weights)))
mean = lambda ts: sum(ts) / len(ts)
for key, sides in times.items():
    a = sides.get("a", [])
    line = f"{key[0]:20s} {key[1]:8s} T={key[2]:<6d}"
    for side in names:
        ts = sides.get(side, [])
        line += f" {side.upper()} {' '.join(f'{t:.1f}' for t in ts):16s}"
        if side != "a":
            line += f" {side.upper()}/A {mean(ts) / mean(a):.3f}" if a and ts else " -"
    print(line)
    if len(set(notes[key].values())) > 1:
        print("    ran: " + "; ".join(f"{s.upper()} {n}" for s, n in notes[key].items()))
PY
