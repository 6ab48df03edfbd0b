#!/usr/bin/env bash
# Forty-second session, call 5, NOT RUN (refused: too little device time left to start a
# machine): two profiles for the next session, main as carried (carry .deps).
#   (a) cuBLASLt's eight heuristics at the dense DeepSeek-V3 M = 64 row (the bench times each and
#       keeps the fastest, #1 on call 1's run): name, grid, cluster, duration, DRAM throughput of
#       each, with the compute ceiling's 8192^3 kernel (nvjet_sm90_tst_320x128_64x3_1x2_h_bz_coopB)
#       left out by the kernel filter;
#   (b) the decode kernel at Qwen3-Next down T = 8 (30 % of the floor in the H200 record), full set.
#   DEADLINE=240 bash docs/gpu-runs/2026-12-07_s42/call5.sh
cd "$(dirname "$0")/../../.."
R=/tmp/r42e; mkdir -p $R
source scripts/gpu_timebox.sh
archive() { tar -czf $OUT/call5.tgz -C /tmp r42e; echo "archived at ${SECONDS}s"; }
nvidia-smi --query-gpu=name,clocks.max.sm,clocks.max.mem --format=csv,noheader
bash -c 'source scripts/gpu_build.sh && release_build "$0" --target metrale_cli' $R/build.log
echo "built at ${SECONDS}s: $(tail -1 $R/build.log)"
M=build/release/bin/metrale
box 60 ncu --clock-control none --section SpeedOfLight --section LaunchStats --section Occupancy \
  -k "regex:^nvjet(?!_sm90_tst_320x128_64x3_1x2_h_bz_coopB)" --launch-count 12 --csv \
  $M bench --ops dense --model deepseek-v3 --tokens 64 --impls cublaslt --budget-ms 2 > $R/lt.csv 2> $R/lt.err
echo "lt rc=$? at ${SECONDS}s"
grep -E "\"Duration\"|DRAM Throughput|\"Grid Size\"|Cluster Size|Registers Per|Dynamic Shared" $R/lt.csv \
  | cut -d, -f5,13,15 | head -60
archive
TIMEOUT=$(( $(left) > 75 ? 60 : 5 )) scripts/gpu_profile.sh $R qn_down_8 decode_kernel \
  $M bench --ops down --model qwen3-next-80b-a3b --tokens 8 --impls metrale --budget-ms 2
grep -h -E "\"Duration\"|DRAM Throughput|L2 Cache Throughput|Issue Slots Busy|Achieved Occupancy|\"Grid Size\"" \
  $R/qn_down_8_details.csv 2>/dev/null | cut -d, -f5,13,15 | head -12
archive
cat $R/skipped.txt 2>/dev/null || true
