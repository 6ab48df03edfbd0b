#!/usr/bin/env bash
# Forty-eighth session, call 3 (carry .deps), on the tree as committed: on an H200 only, the
# recorded sweep of main (every op and preset at the default tokens, 60 ms a row; its JSON goes
# to bench/results, which check_targets.py reads); on any card, the decode family's main kernel
# at DeepSeek-V3 gate_up T = 64 under ncu: instructions executed and issued a cycle (the
# forty-seventh entry's 773 M and 0.65 on an H100).
#   DEADLINE=560 COMMIT=$(git rev-parse --short HEAD) bash docs/gpu-runs/2026-12-08_s48/call3.sh
cd "$(dirname "$0")/../../.."
DEADLINE=${DEADLINE:-560}
NAME=call3 source scripts/gpu_call.sh  # R, box, archive, build, rows
build metrale_cli
M=build/release/bin/metrale
box 60 ncu --clock-control none --section SchedulerStats --section InstructionStats \
  --kernel-name regex:decode_kernel --launch-skip 3 --launch-count 1 $M bench --ops gate_up \
  --model deepseek-v3 --tokens 64 --impls metrale --budget-ms 2 > $R/ncu_decode_T64.log 2>&1
grep -E "Executed Instructions |Issued Ipc|Issue Slots Busy|No Eligible|Active Warps" \
  $R/ncu_decode_T64.log | head -8
archive
if grep -q H200 "$R/nvidia-smi.txt"; then
  box 360 $M bench --ops gate_up down moe dense pack --model all --budget-ms 60 --step-timeout 60 \
    --commit $COMMIT --json $R/sweep_$COMMIT.json > $R/sweep.log 2>&1
  echo "sweep at ${SECONDS}s"; tail -2 $R/sweep.log; archive
fi
cat $R/skipped.txt 2>/dev/null || true
