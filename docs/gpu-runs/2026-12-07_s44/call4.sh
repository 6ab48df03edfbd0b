#!/usr/bin/env bash
# Forty-fourth session, call 4, on call 3's warm H100 (its build kept): the broader GPU tests of
# 225cb23, compute-sanitizer memcheck over the dispatcher's own small-grid plans and K splits, and
# Qwen3-Next dense M = 512 on the 64-token tile whole against the choice (2 K ranges).
#   COMMIT=225cb23 DEADLINE=110 bash docs/gpu-runs/2026-12-07_s44/call4.sh
cd "$(dirname "$0")/../../.."
DEADLINE=${DEADLINE:-110}
NAME=call4 source scripts/gpu_call.sh  # R, box, archive, build, rows
mkdir -p $R/ab
build metrale_cli metrale_test_cuda
T=build/release/bin/metrale_test_cuda M=build/release/bin/metrale
box 45 $T --gtest_filter="TiledFamily.*:Dispatch.*:StreamFamily.*:GraphSmall.*:Consistency.*" \
  > $R/tests.log 2>&1
echo "tests at ${SECONDS}s"; grep -E "PASSED|FAILED|tests ran|Failure" $R/tests.log | tail -6; archive
box 30 compute-sanitizer --tool memcheck $T --gtest_filter="TiledFamily.Bf16KSplitsExactAndRealistic" \
  > $R/memcheck.log 2>&1
echo "memcheck at ${SECONDS}s"; grep -E "ERROR SUMMARY|PASSED|FAILED" $R/memcheck.log | tail -3; archive
for round in 1 2; do
  METRALE_CUDA_KERNEL=sm90-tiled:3:1 box 8 $M bench --ops dense --model qwen3-next-80b-a3b --tokens 512 \
    --impls metrale --budget-ms 20 --json $R/ab/whole$round.json > /dev/null 2>&1
  box 8 $M bench --ops dense --model qwen3-next-80b-a3b --tokens 512 --impls metrale --budget-ms 20 \
    --json $R/ab/choice$round.json > /dev/null 2>&1
done
archive
rows $R/ab/*.json
