#!/usr/bin/env bash
# Written in the forty-fourth session for the next one, NOT RUN: on an H200 only (check_targets
# reads H200 sweeps; an H100's rows must not enter bench/results), the recorded sweep of main:
# every op and preset at the default tokens, 60 ms a row, and DeepSeek-V3 with --skew 1.5, its
# JSONs named for bench/results. The last H200 sweep is 1ccedc9's, before the dense GEMM's TMA
# copies and the small grid's 64-token tile. Carry .deps:
#   COMMIT=$(git rev-parse --short HEAD) bash docs/gpu-runs/2026-12-07_s44/next_call.sh
cd "$(dirname "$0")/../../.."
DEADLINE=${DEADLINE:-575}
NAME=sweep source scripts/gpu_call.sh  # R, box, archive, build, rows
grep -q H200 "$R/nvidia-smi.txt" || { echo "not an H200: no sweep"; exit 0; }
build metrale_cli
M=build/release/bin/metrale
box 330 $M bench --ops gate_up down moe dense pack --model all --budget-ms 60 --step-timeout 60 \
  --commit $COMMIT --json $R/sweep_$COMMIT.json > $R/sweep.log 2>&1
echo "sweep at ${SECONDS}s"; archive
box 60 $M bench --ops gate_up down --model deepseek-v3 --tokens 1 8 64 512 4096 16384 --skew 1.5 \
  --budget-ms 60 --commit $COMMIT --json $R/sweep_skew_$COMMIT.json > $R/sweep_skew.log 2>&1
echo "skew at ${SECONDS}s"; archive
cat $R/skipped.txt 2>/dev/null || true
