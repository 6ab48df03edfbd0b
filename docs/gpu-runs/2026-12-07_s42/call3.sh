#!/usr/bin/env bash
# Forty-second session, call 3: branch combo (51fed08 = tiled-deeper 0555edf + the forty-first
# session's loader patch 0002) against main; then combo's GPU tests; then cuBLASLt's dense kernel
# at DeepSeek-V3 M = 64 under ncu. Packs (carry .deps and .variants):
#   scripts/gpu_variants.sh pack main combo      (e69485a 51fed08)
#   bash docs/gpu-runs/2026-12-07_s42/call3.sh
# combo's decode rows measure 0002 alone (its tiled changes do not reach them), its dense rows
# the tiled changes alone (0002 touches the decode family only).
cd "$(dirname "$0")/../../.."
R=/tmp/r42c; mkdir -p $R
DEADLINE=${DEADLINE:-575}
source scripts/gpu_timebox.sh
archive() { cp /tmp/variants/*.json $R/ 2>/dev/null; tar -czf $OUT/call3.tgz -C /tmp r42c; echo "archived at ${SECONDS}s"; }
nvidia-smi --query-gpu=name,clocks.max.sm,clocks.max.mem,memory.total --format=csv > $R/nvidia-smi.txt 2>&1
cat $R/nvidia-smi.txt
ROUNDS=3 box 330 scripts/gpu_variants.sh run $R/grouped --model all --tokens 8,64 \
  --ops gate_up,down --budget-ms 20 > $R/grouped.log 2>&1
echo "grouped done at ${SECONDS}s"; tail -26 $R/grouped.log
REUSE=1 ROUNDS=3 box 40 scripts/gpu_variants.sh run $R/dense --model all --tokens 48,64 \
  --ops dense --budget-ms 20 > $R/dense.log 2>&1
echo "dense done at ${SECONDS}s"; tail -14 $R/dense.log
archive
box 200 scripts/gpu_variants.sh test $R "TiledFamily.*:ExactSweep.Bf16Gemm:RealisticSweep.Bf16Gemm:\
DecodeFamily.*:ExactSweep.Grouped*:Consistency.*:GraphSmall.*"
echo "tests done at ${SECONDS}s"; grep -E "PASSED|FAILED|tests ran|Failure" $R/tests.log | tail -12
archive
B=$(ls -d /tmp/variants/bin/*/ | head -1)metrale
TIMEOUT=$(( $(left) > 60 ? 40 : 5 )) LAUNCH_SKIP=5 scripts/gpu_profile.sh $R lt_dense_64 "nvjet|xmma|gemm|Kernel" \
  $B bench --ops dense --model deepseek-v3 --tokens 64 --impls cublaslt --budget-ms 2
grep -h -E "Duration|DRAM Throughput|L2 Cache Throughput|Grid Size|Block Size|Registers Per|Shared Memory Config|Dynamic Shared|Achieved Occupancy|Cluster" \
  $R/lt_dense_64_details.csv 2>/dev/null | cut -c1-250 | head -20
archive
cat $R/skipped.txt 2>/dev/null || true
