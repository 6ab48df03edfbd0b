#!/usr/bin/env bash
# Forty-eighth session, call 5 (carry .deps; asked with needs_h200): on an H200 only, the decode
# rows of main as committed (gate_up and down, every preset, T = 1, 8, 64, 30 ms a row, every
# opponent the build has), its JSON for bench/results: the H200 is where the decode
# family is issue-bound (the forty-seventh entry), so where the fragment order's word layout
# (6.6 % fewer instructions) should show. On another card it stops at once.
#   DEADLINE=... COMMIT=$(git rev-parse --short HEAD) bash docs/gpu-runs/2026-12-08_s48/call5.sh
cd "$(dirname "$0")/../../.."
nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200 || { echo "not an H200"; exit 0; }
DEADLINE=${DEADLINE:-420}
NAME=call5 source scripts/gpu_call.sh  # R, box, archive, build, rows
build metrale_cli
box 250 build/release/bin/metrale bench --ops gate_up down --model all --tokens 1 8 64 \
  --budget-ms 30 \
  --step-timeout 60 --commit $COMMIT --json $R/sweep_grouped_$COMMIT.json > $R/sweep.log 2>&1
echo "sweep at ${SECONDS}s"; tail -2 $R/sweep.log; archive
cp $R/sweep_grouped_$COMMIT.json $OUT/ 2>/dev/null
cat $R/skipped.txt 2>/dev/null || true
