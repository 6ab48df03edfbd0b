#!/usr/bin/env bash
# Forty-seventh session, call 5, on main's tree with the small dense rule as landed (a CTA's
# weights at most 64 KiB, N / 16 CTAs within the SMs). Carry .deps.
#  (a) the stream family's GPU tests, the dense sweeps, the tiled family's dense tests;
#  (b) the dense GEMM at M = 33-64 on the presets and small_shapes.json, A the rule against T the
#      tiled family's plan, 2 alternated rounds (call3's rows, re-read under the final bound);
#  (c) where the decode family's issue slots go: ncu of its main kernel at DeepSeek-V3 gate_up
#      T = 64 with the stall reasons a issued instruction and the pipes' instruction counts.
#   COMMIT=$(git rev-parse --short HEAD) bash docs/gpu-runs/2026-12-07_s47/call5.sh
cd "$(dirname "$0")/../../.."
DEADLINE=${DEADLINE:-585}
NAME=call5 source scripts/gpu_call.sh  # R, box, archive, build, rows
build metrale_cli metrale_test_cuda
M=build/release/bin/metrale
T=build/release/bin/metrale_test_cuda
S=docs/gpu-runs/2026-12-07_s47/small_shapes.json
box 150 $T --gtest_filter="StreamFamily.*:ExactSweep.Bf16Gemm:RealisticSweep.Bf16Gemm:TiledFamily.Dense*" \
  > $R/tests.log 2>&1
echo "tests at ${SECONDS}s"; grep -E "^\[  |Failure|FAIL" $R/tests.log | tail -6; archive
box 60 ncu --clock-control none --section SchedulerStats --section InstructionStats \
  --metrics regex:smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio,regex:sm__inst_executed_pipe_.*\.sum$ \
  --kernel-name regex:decode_kernel --launch-skip 3 --launch-count 1 $M bench --ops gate_up \
  --model deepseek-v3 --tokens 64 --impls metrale --budget-ms 2 > $R/ncu_decode_stalls.log 2>&1
grep -E "stalled|pipe_|Issued|Executed Ipc" $R/ncu_decode_stalls.log | sort -k3 -n -r | head -40
archive
mkdir -p $R/ab
for round in 1 2; do
  for v in $(round_order $round A T); do
    k=; [[ $v == T ]] && k=sm90-tiled
    for set in "--model all" "--shapes $S"; do
      tag=$v$round; [[ $set == --shapes* ]] && tag=${v}s$round
      METRALE_CUDA_KERNEL=$k box 40 $M bench --ops dense $set --tokens 33 48 64 --impls metrale \
        --budget-ms 15 --json $R/ab/$tag.json > $R/ab/$tag.log 2>&1
    done
  done
  echo "round $round at ${SECONDS}s"
done
python3 scripts/ab_table.py $R/ab --variants T --labels A | head -45 | tee $R/ab_table.txt
archive
cat $R/skipped.txt 2>/dev/null || true
