#!/usr/bin/env bash
# Forty-fifth session, call 3 (minimal, the last device time): the cursor's build, stream-K's
# tests, one A/B round of A-E (call1.sh's variants), its table (since it ran, through
# scripts/ab_table.py).
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
python3 scripts/ab_table.py $R/ab --variants BCDE --labels B | tee $R/ab_table.txt
archive
