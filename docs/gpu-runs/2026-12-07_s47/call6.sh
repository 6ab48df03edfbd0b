#!/usr/bin/env bash
# Forty-seventh session, the last call (written for the device time left, ~330 s of command):
# on an H200, the recorded sweep of main (s44's next_call.sh, 60 ms a row, no skew rows) for
# bench/results; on an H100, call5.sh (the small dense rule's GPU tests, the decode family's
# stall reasons, the rule's rows). Carry .deps:
#   DEADLINE=320 COMMIT=$(git rev-parse --short HEAD) bash docs/gpu-runs/2026-12-07_s47/call6.sh
cd "$(dirname "$0")/../../.."
if nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200; then
  DEADLINE=${DEADLINE:-320}
  NAME=sweep source scripts/gpu_call.sh  # R, box, archive, build, rows
  build metrale_cli
  box 400 build/release/bin/metrale bench --ops gate_up down moe dense pack --model all \
    --budget-ms 60 --step-timeout 60 --commit $COMMIT --json $R/sweep_$COMMIT.json > $R/sweep.log 2>&1
  echo "sweep at ${SECONDS}s"; tail -2 $R/sweep.log; archive
  cat $R/skipped.txt 2>/dev/null || true
else
  bash docs/gpu-runs/2026-12-07_s47/call5.sh
fi
