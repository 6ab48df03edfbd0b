#!/usr/bin/env bash
# Forty-second session, call 2: the tiled loader's L2 prefetch and deeper pipelines on the dense
# bf16 GEMM, against main. Packs (carry .deps and .variants):
#   scripts/gpu_variants.sh pack main tiled-l2-prefetch tiled-deeper   (e69485a 630de03 0555edf)
#   bash docs/gpu-runs/2026-12-07_s42/call2.sh
cd "$(dirname "$0")/../../.."
R=/tmp/r42b; mkdir -p $R
source scripts/gpu_timebox.sh
archive() { cp /tmp/variants/*.json $R/ 2>/dev/null; tar -czf $OUT/call2.tgz -C /tmp r42b; echo "archived at ${SECONDS}s"; }
nvidia-smi --query-gpu=name,clocks.max.sm,clocks.max.mem,memory.total --format=csv > $R/nvidia-smi.txt 2>&1
cat $R/nvidia-smi.txt
ROUNDS=${ROUNDS:-3} box $((DEADLINE - 30)) scripts/gpu_variants.sh run $R/var --model all \
  --tokens 16,24,32,48,64,512 --ops dense --budget-ms 20 > $R/variants.log 2>&1
echo "variants done at ${SECONDS}s"; tail -45 $R/variants.log
archive
cat $R/skipped.txt 2>/dev/null || true
