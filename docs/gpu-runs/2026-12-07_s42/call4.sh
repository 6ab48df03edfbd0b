#!/usr/bin/env bash
# Forty-second session, call 4: main 2f4c16a as carried (carry .deps): the GPU tests call 3 left
# unrun on the tiled change (its time box ended in TiledFamily), then two profiles for the next
# session: cuBLASLt's dense kernel at DeepSeek-V3 M = 64 (the first six cuBLASLt launches of the
# run, the compute ceiling's among them) and the decode kernel at Qwen3-Next down T = 8 (30 % of
# the floor in the H200 record, the lowest decode row).
#   DEADLINE=470 bash docs/gpu-runs/2026-12-07_s42/call4.sh
cd "$(dirname "$0")/../../.."
R=/tmp/r42d; mkdir -p $R
source scripts/gpu_timebox.sh
archive() { tar -czf $OUT/call4.tgz -C /tmp r42d; echo "archived at ${SECONDS}s"; }
nvidia-smi --query-gpu=name,clocks.max.sm,clocks.max.mem,memory.total --format=csv > $R/nvidia-smi.txt 2>&1
cat $R/nvidia-smi.txt
bash -c 'source scripts/gpu_build.sh && release_build "$0" --target metrale_test_cuda metrale_cli' \
  $R/build.log
echo "built at ${SECONDS}s: $(tail -1 $R/build.log)"
box 150 build/release/bin/metrale_test_cuda --gtest_filter="ExactSweep.Bf16Gemm:\
RealisticSweep.Bf16Gemm:TiledExactSweep.*:TiledFamily.EveryTileOnTheFragmentOrderExact:\
TiledFamily.FragmentOrder*:TiledFamily.EveryTileDenseExact:TiledFamily.Bf16KSplitsExactAndRealistic:\
Consistency.*:GraphSmall.*:StreamFamily.*" > $R/tests.log 2>&1
echo "tests rc=$? at ${SECONDS}s"; grep -E "PASSED|FAILED|tests ran|Failure" $R/tests.log | tail -12
archive
M=build/release/bin/metrale
TIMEOUT=$(( $(left) > 100 ? 60 : 5 )) LAUNCH_SKIP=0 LAUNCH_COUNT=6 scripts/gpu_profile.sh $R lt_dense_64 \
  "nvjet|xmma|gemm" $M bench --ops dense --model deepseek-v3 --tokens 64 --impls cublaslt --budget-ms 2
grep -h -E "\"Duration\"|DRAM Throughput|Grid Size|Block Size|Cluster Size|Dynamic Shared" \
  $R/lt_dense_64_details.csv 2>/dev/null | cut -d, -f5,9,13,15 | head -40
archive
TIMEOUT=$(( $(left) > 75 ? 60 : 5 )) scripts/gpu_profile.sh $R qn_down_8 decode_kernel \
  $M bench --ops down --model qwen3-next-80b-a3b --tokens 8 --impls metrale --budget-ms 2
grep -h -E "\"Duration\"|DRAM Throughput|L2 Cache Throughput|Issue Slots Busy|Achieved Occupancy|Grid Size" \
  $R/qn_down_8_details.csv 2>/dev/null | cut -d, -f5,13,15 | head -12
archive
cat $R/skipped.txt 2>/dev/null || true
