#!/usr/bin/env bash
# Call 2 (never started: no machine came): ncu of main's decode kernels, DeepSeek-V3 gate_up T = 64
# (8-token, on an H200 only: call 1 has the H100's) and Mixtral-8x7B gate_up T = 1, full raw
# metrics; then Mixtral down and gate_up T = 1 with the decode split forced to 2, 7 and 14.
cd "$(dirname "$0")/../../.."  # the repository root: run it as bash docs/gpu-runs/2026-12-07_h100_s38/<this file>
R=/tmp/r2; mkdir -p $R
source scripts/gpu_build.sh
nvidia-smi --query-gpu=name,clocks.max.sm,clocks.max.mem,memory.total --format=csv > $R/nvidia-smi.txt 2>&1
release_build $R/build.log --target metrale_cli || { tail -20 $R/build.log; exit 1; }
BIN=build/release/bin/metrale
prof() {  # name model T: one decode kernel launch of a gate_up bench row
  scripts/gpu_profile.sh $R $1 decode_kernel $BIN bench --ops gate_up --model $2 --tokens $3 \
    --impls metrale --budget-ms 2
}
grep -q H200 $R/nvidia-smi.txt && prof ds_T64 deepseek-v3 64  # an H100's: call 1
prof mx_T1 mixtral-8x7b 1
# (the 32-token profile: call 1, H100)
# Mixtral down T = 1 (128 tiles, 14 chunks of 1024 K): the split rule's choice (4) against forced 2, 7, 14.
for round in 1 2; do
  for c in auto sm90-decode:0:2 sm90-decode:0:7 sm90-decode:0:14; do
    k=$c; [[ $c == auto ]] && k=
    METRALE_CUDA_KERNEL=$k $BIN bench --ops down gate_up --model mixtral-8x7b --tokens 1 --impls metrale --budget-ms 20 \
      --json $R/split_${c//:/_}_$round.json > $R/split_${c//:/_}_$round.log 2>&1
  done
done
tar -czf $OUT/call2.tgz -C /tmp r2
grep -h -E "Duration|DRAM Throughput|L2 Cache Throughput|Issue Slots Busy" $R/*_details.csv
