#!/usr/bin/env bash
# Forty-second session, call 1: where the dense bf16 GEMM's small-M time goes (issue 8: 0.59-0.90x
# cuBLASLt at M = 16-64 and 512). Main as carried (carry .deps):
#   bash docs/gpu-runs/2026-12-07_s42/call1.sh
# (a) the family's own choice and cuBLASLt, M = 16, 24, 32, 48, 64, 512, the five presets;
# (b) every tiled tile that holds the rows, forced with 1-8 K ranges; the stream family's
#     configurations forced at M <= 64; (c) ncu of the DeepSeek-V3 M = 64 row as the family runs it.
cd "$(dirname "$0")/../../.."
R=/tmp/r42; mkdir -p $R/forced
source scripts/gpu_timebox.sh
archive() { tar -czf $OUT/call1.tgz -C /tmp r42; echo "archived at ${SECONDS}s"; }
nvidia-smi --query-gpu=name,clocks.max.sm,clocks.max.mem,memory.total --format=csv > $R/nvidia-smi.txt 2>&1
cat $R/nvidia-smi.txt
bash -c 'source scripts/gpu_build.sh && release_build "$0" --target metrale_cli' $R/build.log
echo "built at ${SECONDS}s: $(tail -1 $R/build.log)"
M=build/release/bin/metrale
box 60 $M bench --ops dense --model all --tokens 16 24 32 48 64 512 --impls metrale cublaslt \
  --budget-ms 20 --json $R/auto.json > $R/auto.log 2>&1
echo "auto at ${SECONDS}s"; archive
forced() {  # NAME KERNEL TOKENS...
  local name=$1 kernel=$2
  shift 2
  METRALE_CUDA_KERNEL=$kernel box 30 $M bench --ops dense --model all --tokens "$@" \
    --impls metrale --budget-ms 8 --json $R/forced/$name.json > $R/forced/$name.log 2>&1
}
for s in 1 2 3 4 6 8; do
  forced t2_s$s sm90-tiled:2:$s 24 32 48 64
  forced t3_s$s sm90-tiled:3:$s 48 64
  forced t1_s$s sm90-tiled:1:$s 16
done
echo "tiled small at ${SECONDS}s"; archive
for c in 1 2 3 4 5; do forced st$c sm90-stream:$c 16 24 32 48 64; done
echo "stream at ${SECONDS}s"; archive
for s in 1 2 3 4; do
  forced t6_s$s sm90-tiled:6:$s 512
  forced t3m_s$s sm90-tiled:3:$s 512
done
echo "tiled 512 at ${SECONDS}s"; archive
TIMEOUT=$(( $(left) > 75 ? 50 : 5 )) scripts/gpu_profile.sh $R ds_dense_64 grouped_gemm \
  $M bench --ops dense --model deepseek-v3 --tokens 64 --impls metrale --budget-ms 2
echo "profile at ${SECONDS}s"
grep -h -E "Duration|DRAM Throughput|L2 Cache Throughput|Issue Slots Busy|Achieved Occupancy|Registers Per|Block Limit" \
  $R/*_details.csv 2>/dev/null | head -20
archive
cat $R/skipped.txt 2>/dev/null || true
