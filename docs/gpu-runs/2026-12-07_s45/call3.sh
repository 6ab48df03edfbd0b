#!/usr/bin/env bash
# Forty-fifth session, call 3: call 2 again on the copying thread's cursor (call 2: the 64-bit
# divisions a stage in thread 0 held back its warpgroup), 3 rounds, H: pairs on tile 3.
#  (a) build; stream-K's GPU tests (every stream-K tile forced, CTAs and pairs, exact and
#      realistic, the family's own plans, the refusal; a CUDA graph replayed on new activations);
#      no A/B unless they pass;
#  (b) the dense GEMM of every preset at M = 48, 64, 512, 1024, 4096, 3 alternated rounds:
#      A the tile grid (METRALE_CUDA_DENSE_SCHEDULE=tiles, main's plans), B stream-K on the
#      family's tile, C-E stream-K forced on tiles 3, 6 and 7, F stream-K pairs (clusters of 2
#      sharing the weight copies) on the family's tile, G pairs on tile 6; cuBLASLt once; the
#      ratios to A;
#  (c) with the time left, the dense TMA and K-split tests, then compute-sanitizer memcheck over
#      the forced stream-K test.
#   COMMIT=$(git rev-parse --short HEAD) bash docs/gpu-runs/2026-12-07_s45/call3.sh
cd "$(dirname "$0")/../../.."
DEADLINE=${DEADLINE:-575}
NAME=call3 source scripts/gpu_call.sh  # R, box, archive, build, rows
mkdir -p $R/ab
build metrale_cli metrale_test_cuda
M=build/release/bin/metrale
T=build/release/bin/metrale_test_cuda
box 80 $T --gtest_filter="TiledFamily.DenseStreamKExactAndRealistic:Schedules/GraphStreamK.*" \
  > $R/tests.log 2>&1
echo "tests at ${SECONDS}s"; grep -E "^\[  |Failure|FAIL" $R/tests.log | tail -12; archive
if ! grep -q "OK \] TiledFamily.DenseStreamKExactAndRealistic" $R/tests.log; then
  echo "stream-K's test did not pass: no A/B"; tail -40 $R/tests.log; exit 0
fi
ab() {  # NAME SCHEDULE [KERNEL]
  METRALE_CUDA_DENSE_SCHEDULE=$2 METRALE_CUDA_KERNEL=$3 box 40 $M bench --ops dense --model all \
    --tokens 48 64 512 1024 4096 --impls metrale --budget-ms 15 --json $R/ab/$1.json \
    > $R/ab/$1.log 2>&1
}
for round in 1 2 3; do
  order="A B C D E F G H"; [[ $round == 2 ]] && order="H G F E D C B A"
  for v in $order; do
    case $v in
      A) ab A$round tiles ;; B) ab B$round stream-k ;;
      C) ab C$round stream-k sm90-tiled:3 ;; D) ab D$round stream-k sm90-tiled:6 ;;
      E) ab E$round stream-k sm90-tiled:7 ;; F) ab F$round stream-k-pairs ;;
      G) ab G$round stream-k-pairs sm90-tiled:6 ;; H) ab H$round stream-k-pairs sm90-tiled:3 ;;
    esac
  done
  echo "round $round at ${SECONDS}s"; archive
done
box 40 $M bench --ops dense --model all --tokens 48 64 512 1024 4096 --impls cublaslt \
  --budget-ms 15 --json $R/ab/L.json > $R/ab/L.log 2>&1
archive
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
box 60 $T --gtest_filter="TiledFamily.DenseCopiesByTmaAndCpAsyncExact:TiledFamily.Bf16KSplits*" \
  > $R/tests2.log 2>&1
grep -E "^\[  |Failure" $R/tests2.log | tail -4
box 100 compute-sanitizer --tool memcheck --print-limit 5 $T \
  --gtest_filter=TiledFamily.DenseStreamKExactAndRealistic > $R/memcheck.log 2>&1
tail -3 $R/memcheck.log; archive
cat $R/skipped.txt 2>/dev/null || true
