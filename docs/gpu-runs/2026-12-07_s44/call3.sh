#!/usr/bin/env bash
# Forty-fourth session, call 3: the small dense grid's 64-token tile (narrow_small_grid).
#  (a) build; the tiled family's dense GPU tests (the dispatcher's own K splits and small grids
#      through the public call, every tile with TMA and cp.async, the bf16 sweeps);
#  (b) Qwen3-30B and Qwen3-Next dense M = 512, the new choice (the 64-token tile) against the old
#      one forced (the 128-token tile in 2 and 4 K ranges), 3 alternated rounds, cuBLASLt beside;
#  (c) on an H200 only: the dense sweep of every preset at the default tokens (metrale and
#      cuBLASLt, 60 ms a row), its JSON named for bench/results (check_targets reads the newest
#      file of each row).
#   COMMIT=$(git rev-parse --short HEAD) DEADLINE=380 bash docs/gpu-runs/2026-12-07_s44/call3.sh
# (ROUNDS, default 3, and TEST_S, the tests' box in seconds, default 70, shorten it.)
cd "$(dirname "$0")/../../.."
DEADLINE=${DEADLINE:-380}
NAME=call3 source scripts/gpu_call.sh  # R, box, archive, build, rows
mkdir -p $R/ab
build metrale_cli metrale_test_cuda
M=build/release/bin/metrale
TESTS="TiledFamily.Bf16KSplitsExactAndRealistic:TiledFamily.EveryTileDenseExact"
TESTS+=":TiledFamily.DenseCopiesByTmaAndCpAsyncExact:ExactSweep.Bf16Gemm:RealisticSweep.Bf16Gemm"
box ${TEST_S:-70} build/release/bin/metrale_test_cuda --gtest_filter="$TESTS" > $R/tests.log 2>&1
echo "tests at ${SECONDS}s"; grep -E "PASSED|FAILED|tests ran|Failure" $R/tests.log | tail -8; archive
ab() {  # NAME MODEL [KERNEL]
  METRALE_CUDA_KERNEL=$3 box 15 $M bench --ops dense --model $2 --tokens 512 --impls metrale \
    --budget-ms 20 --json $R/ab/$1.json > $R/ab/$1.log 2>&1
}
for round in $(seq 1 ${ROUNDS:-3}); do
  for side in new old; do
    [[ $round == 2 ]] && side=$([[ $side == new ]] && echo old || echo new)
    if [[ $side == new ]]; then ab new_q$round qwen3-30b-a3b; ab new_n$round qwen3-next-80b-a3b
    else ab old_q$round qwen3-30b-a3b sm90-tiled:6:2; ab old_n$round qwen3-next-80b-a3b sm90-tiled:6:4; fi
  done
done
echo "ab at ${SECONDS}s"; archive
if grep -q H200 $R/nvidia-smi.txt; then
  box 150 $M bench --ops dense --model all --impls metrale cublaslt --budget-ms 60 --step-timeout 60 \
    --commit $COMMIT --json $R/sweep_dense_$COMMIT.json > $R/sweep_dense.log 2>&1
  echo "sweep at ${SECONDS}s"; archive
else
  box 30 $M bench --ops dense --model qwen3-30b-a3b qwen3-next-80b-a3b --tokens 512 --impls cublaslt \
    --budget-ms 20 --json $R/ab/cublaslt.json > $R/ab/cublaslt.log 2>&1
  archive
fi
rows $R/ab/*.json
cat $R/skipped.txt 2>/dev/null || true
