#!/usr/bin/env bash
# Forty-fifth session, call 1: stream-K for the dense bf16 GEMM (stream_k_kernel.cuh).
#  (a) build; stream-K's GPU tests (every stream-K tile forced, CTAs and pairs, exact and
#      realistic, the family's own plans, the refusal; a CUDA graph replayed on new activations);
#      no A/B unless they pass;
#  (b) the dense GEMM of every preset at M = 48, 64, 512, 1024, 4096, 2 alternated rounds:
#      A the tile grid (METRALE_CUDA_DENSE_SCHEDULE=tiles, main's plans), B stream-K on the
#      family's tile, C-E stream-K forced on tiles 3, 6 and 7, F stream-K pairs (clusters of 2
#      sharing the weight copies) on the family's tile, G pairs on tile 6; cuBLASLt once; the
#      ratios to A;
#  (c) with the time left, the dense TMA and K-split tests, then compute-sanitizer memcheck over
#      the forced stream-K test.
#   COMMIT=$(git rev-parse --short HEAD) bash docs/gpu-runs/2026-12-07_s45/call1.sh
# CALL (default call1), ROUNDS (2) and VARIANTS ("A B C D E F G"; H: pairs on tile 3) make calls 2
# and 3 of it. Since it ran, its table's Python moved into scripts/ab_table.py (the same output).
cd "$(dirname "$0")/../../.."
DEADLINE=${DEADLINE:-575}
VARIANTS=${VARIANTS:-A B C D E F G}
NAME=${CALL:-call1} source scripts/gpu_call.sh  # R, box, archive, build, rows
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
for round in $(seq 1 ${ROUNDS:-2}); do
  order=$VARIANTS  # reversed in even rounds, so that none always runs first
  ((round % 2 == 0)) && order=$(echo $VARIANTS | tr ' ' '\n' | tac | tr '\n' ' ')
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
compared=${VARIANTS// /}
python3 scripts/ab_table.py $R/ab --variants ${compared#A} --labels BF | tee $R/ab_table.txt
box 60 $T --gtest_filter="TiledFamily.DenseCopiesByTmaAndCpAsyncExact:TiledFamily.Bf16KSplits*" \
  > $R/tests2.log 2>&1
grep -E "^\[  |Failure" $R/tests2.log | tail -4
box 100 compute-sanitizer --tool memcheck --print-limit 5 $T \
  --gtest_filter=TiledFamily.DenseStreamKExactAndRealistic > $R/memcheck.log 2>&1
tail -3 $R/memcheck.log; archive
cat $R/skipped.txt 2>/dev/null || true
