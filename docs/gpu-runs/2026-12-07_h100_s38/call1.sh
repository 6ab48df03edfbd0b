#!/usr/bin/env bash
# Call 1: decode family at T = 1-512, main against cf281e6, main without the L2 prefetch, main on
# the halves layout; then ncu of main's 32-token kernel (DeepSeek-V3 T = 512) and 8-token (T = 64).
cd "$(dirname "$0")/../../.."  # the repository root: run it as bash docs/gpu-runs/2026-12-07_h100_s38/<this file>
R=/tmp/r1; mkdir -p $R
nvidia-smi --query-gpu=name,clocks.max.sm,clocks.max.mem,memory.total --format=csv > $R/nvidia-smi.txt 2>&1
ROUNDS=2 timeout 360 scripts/gpu_variants.sh run $R --model all --tokens 1,8,64,512 --ops gate_up,down --budget-ms 20 > $R/variants.log 2>&1
cp /tmp/variants/*.log $R/ 2>/dev/null
mkdir -p $R/raw && cp /tmp/variants/*.json $R/raw/ 2>/dev/null
tar -czf $OUT/call1.tgz -C /tmp r1
BIN=/tmp/variants/bin/b082f4e/metrale
for t in 512 64; do
  timeout 50 ncu --clock-control none --set full --import-source no -k regex:decode_kernel --launch-skip 3 --launch-count 1 \
    -o $R/ncu_ds_gate_up_T$t $BIN bench --ops gate_up --model deepseek-v3 --tokens $t --impls metrale --budget-ms 2 > $R/ncu_T$t.log 2>&1
  ncu --import $R/ncu_ds_gate_up_T$t.ncu-rep --page details --csv > $R/ncu_details_T$t.csv 2>/dev/null
  ncu --import $R/ncu_ds_gate_up_T$t.ncu-rep --page source --csv --print-source sass > $R/ncu_sass_T$t.csv 2>/dev/null
  rm -f $R/ncu_ds_gate_up_T$t.ncu-rep
done
tar -czf $OUT/call1.tgz -C /tmp r1
tail -50 $R/table.txt
