#!/usr/bin/env bash
# Forty-fifth session, call 3 (minimal, the last device time): the cursor's build, stream-K's
# tests, one A/B round of A-E (call3.sh's variants), its table.
cd "$(dirname "$0")/../../.."
DEADLINE=${DEADLINE:-150}
NAME=call3 source scripts/gpu_call.sh
mkdir -p $R/ab
build metrale_cli metrale_test_cuda
M=build/release/bin/metrale
box 12 build/release/bin/metrale_test_cuda \
  --gtest_filter="TiledFamily.DenseStreamKExactAndRealistic:Schedules/GraphStreamK.*" > $R/tests.log 2>&1
grep -E "^\[  |Failure" $R/tests.log | tail -5; archive
grep -q "OK \] TiledFamily.DenseStreamKExactAndRealistic" $R/tests.log || exit 0
ab() { METRALE_CUDA_DENSE_SCHEDULE=$2 METRALE_CUDA_KERNEL=$3 box 6 $M bench --ops dense --model all \
  --tokens 48 64 512 1024 4096 --impls metrale --budget-ms 10 --json $R/ab/$1.json > $R/ab/$1.log 2>&1; }
ab A1 tiles; ab B1 stream-k; ab C1 stream-k sm90-tiled:3; ab D1 stream-k sm90-tiled:6
ab E1 stream-k sm90-tiled:7; archive
python3 - $R/ab <<'PY' | tee $R/ab_table.txt
import glob, json, os, sys
best, label = {}, {}
for f in glob.glob(sys.argv[1] + "/*.json"):
    v = os.path.basename(f)[0]
    try: rows = json.load(open(f))["rows"]
    except Exception: continue
    for r in rows:
        if r.get("status") != "ok": continue
        key = (r["model"][:12], r["tokens"])
        t = r["median_us"]
        if t < best.get((v, key), 1e18): best[(v, key)] = t; label[(v, key)] = r.get("kernel", "")
keys = sorted({k for (_, k) in best}, key=lambda k: (k[0], k[1]))
print(f"{'model':12s} {'M':>5s} {'A tiles':>9s} " + " ".join(f"{v:>6s}" for v in "BCDEFGH") + "   L/A   A's plan")
for k in keys:
    a = best.get(("A", k))
    if not a: continue
    cells = " ".join(f"{best[(v, k)] / a:6.3f}" if (v, k) in best else "     -" for v in "BCDEFGH")
    l = best.get(("L", k))
    print(f"{k[0]:12s} {k[1]:5d} {a:9.2f} {cells} {l / a if l else 0:6.3f}   {label[('A', k)]}")
for k in keys:
    for v in "BF":
        if (v, k) in label: print(v, k, label[(v, k)])
PY
archive
