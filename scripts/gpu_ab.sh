#!/usr/bin/env bash
# Two kernel choices measured in one GPU call, on the same build, machine and clocks (machines of
# one kind differ by 5-10 % between calls, so an A/B across calls says little): build the release
# tree, then run `metrale bench` once per METRALE_CUDA_KERNEL value ('' = the dispatcher's own
# choice), alternating A, B, A, B, and print each row's times side by side. A choice written
# VARIABLE=VALUE sets that variable instead (e.g. METRALE_CUDA_QUANTIZER=lean for the quantizer).
#
#   scripts/gpu_ab.sh OUTDIR KERNEL_A KERNEL_B [BENCH_ARGS...]
#   e.g. scripts/gpu_ab.sh /tmp/ab sm90-tiled:4 sm90-tiled:6 --ops gate_up down --tokens 4096
#        scripts/gpu_ab.sh /tmp/ab METRALE_CUDA_QUANTIZER=proven METRALE_CUDA_QUANTIZER=lean \
#          --ops pack pack_unit
#
# OUTDIR/build.log, a1.json, b1.json, a2.json, b2.json (and their .log); ROUNDS=N for N rounds.
set -uo pipefail
cd "$(dirname "$0")/.."
if [[ $# -lt 3 ]]; then
  echo "usage: scripts/gpu_ab.sh OUTDIR KERNEL_A KERNEL_B [BENCH_ARGS...]" >&2
  exit 2
fi
OUT=$(mkdir -p "$1" && cd "$1" && pwd)
declare -A KERNEL=([a]=$2 [b]=$3)
shift 3
source scripts/gpu_build.sh
if ! release_build "$OUT/build.log" --target metrale_cli; then
  grep -m 20 -E "error|FAILED" "$OUT/build.log"
  exit 1
fi
for round in $(seq 1 "${ROUNDS:-2}"); do
  for side in a b; do
    choice=${KERNEL[$side]}
    [[ $choice == *=* ]] || choice=METRALE_CUDA_KERNEL=$choice
    env "$choice" build/release/bin/metrale bench --impls metrale "$@" \
      --json "$OUT/$side$round.json" >"$OUT/$side$round.log" 2>&1 ||
      echo "bench $side$round failed: see $OUT/$side$round.log"
  done
done
python3 - "$OUT" "${KERNEL[a]:-auto}" "${KERNEL[b]:-auto}" <<'PY'
import glob, json, os, sys
out, name_a, name_b = sys.argv[1:4]
times = {}  # (model, op, T) -> side -> [median us per round]
notes = {}
for path in sorted(glob.glob(os.path.join(out, "[ab][0-9]*.json"))):
    side = os.path.basename(path)[0]
    for r in json.load(open(path))["rows"]:
        if r.get("status") != "ok" or r["impl"] != "metrale":
            continue
        key = (r["model"], r["op"], r["tokens"])
        times.setdefault(key, {}).setdefault(side, []).append(r["median_us"])
        notes.setdefault(key, {})[side] = r.get("note", "")
print(f"A = {name_a}, B = {name_b}: median us per round, B / A of the round means")
for key, sides in times.items():
    a, b = sides.get("a", []), sides.get("b", [])
    ratio = f"{(sum(b) / len(b)) / (sum(a) / len(a)):.3f}" if a and b else "-"
    print(f"{key[0]:20s} {key[1]:8s} T={key[2]:<6d} A {' '.join(f'{t:.1f}' for t in a):24s} "
          f"B {' '.join(f'{t:.1f}' for t in b):24s} B/A {ratio}")
    if notes[key].get("a") != notes[key].get("b"):
        print(f"    A ran: {notes[key].get('a')}; B ran: {notes[key].get('b')}")
PY
