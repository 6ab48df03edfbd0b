#!/usr/bin/env bash
# Written in the forty-fourth session for the next one, NOT RUN: on an H200 only (check_targets
# reads H200 sweeps; an H100's rows must not enter bench/results), the recorded sweep of main:
# every op and preset at the default tokens, 60 ms a row, and DeepSeek-V3 with --skew 1.5, its
# JSONs named for bench/results. The last H200 sweep is 1ccedc9's, before the dense GEMM's TMA
# copies and the small grid's 64-token tile. Then, on any GPU, with the time left: the kernels
# cuBLASLt runs for the dense GEMM at M = 64 and 512 on Qwen3-30B and Qwen3-Next, by name (ncu,
# one metric, a window of 40 launches: the bench's ceiling kernels come first). Carry .deps:
#   COMMIT=$(git rev-parse --short HEAD) bash docs/gpu-runs/2026-12-07_s44/next_call.sh
cd "$(dirname "$0")/../../.."
DEADLINE=${DEADLINE:-575}
NAME=sweep source scripts/gpu_call.sh  # R, box, archive, build, rows
build metrale_cli
M=build/release/bin/metrale
if grep -q H200 "$R/nvidia-smi.txt"; then
  box 330 $M bench --ops gate_up down moe dense pack --model all --budget-ms 60 --step-timeout 60 \
    --commit $COMMIT --json $R/sweep_$COMMIT.json > $R/sweep.log 2>&1
  echo "sweep at ${SECONDS}s"; archive
  box 60 $M bench --ops gate_up down --model deepseek-v3 --tokens 1 8 64 512 4096 16384 --skew 1.5 \
    --budget-ms 60 --commit $COMMIT --json $R/sweep_skew_$COMMIT.json > $R/sweep_skew.log 2>&1
  echo "skew at ${SECONDS}s"; archive
fi
for m in qwen3-30b-a3b qwen3-next-80b-a3b; do
  for t in 64 512; do
    box 40 ncu --clock-control none --metrics gpu__time_duration.sum --launch-count 40 \
      $M bench --ops dense --model $m --tokens $t --impls cublaslt --budget-ms 1 > $R/ncu_${m}_$t.log 2>&1
  done
done
archive
grep -h -E "^  [a-zA-Z_].*\(" $R/ncu_*.log | grep -v -E "read_stream|copy_stream" | sort | uniq -c | cut -c1-220
cat $R/skipped.txt 2>/dev/null || true
