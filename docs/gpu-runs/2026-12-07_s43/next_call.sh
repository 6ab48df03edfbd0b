#!/usr/bin/env bash
# Written in the forty-third session for the next one, NOT RUN (no device time was left): on an
# H200, (a) the recorded sweep of main for check_targets (every op, every preset, 60 ms a row, and
# DeepSeek-V3 with --skew 1.5), its JSONs named for bench/results; (b) the dense GEMM's tiles and
# K splits forced with TMA where it stays under 0.9x cuBLASLt (M = 48-64 and 512; call 2's forced
# rows did not come back: its filter printed the wrong column). Carry .deps:
#   COMMIT=$(git rev-parse --short HEAD) bash docs/gpu-runs/2026-12-07_s43/next_call.sh
cd "$(dirname "$0")/../../.."
R=/tmp/rn; mkdir -p $R/forced
DEADLINE=${DEADLINE:-575}
source scripts/gpu_timebox.sh
archive() { tar -czf $OUT/next_call.tgz -C /tmp rn; echo "archived at ${SECONDS}s"; }
nvidia-smi --query-gpu=name,clocks.max.sm,clocks.max.mem,memory.total --format=csv > $R/nvidia-smi.txt 2>&1
cat $R/nvidia-smi.txt
export METRALE_COMMIT=${COMMIT:?name the commit the tree holds}
bash -c 'source scripts/gpu_build.sh && release_build "$0" --target metrale_cli' $R/build.log
echo "built at ${SECONDS}s: $(tail -1 $R/build.log)"
M=build/release/bin/metrale
box 300 $M bench --ops gate_up down moe dense pack --model all --budget-ms 60 --step-timeout 60 \
  --commit $COMMIT --json $R/sweep_$COMMIT.json > $R/sweep.log 2>&1
echo "sweep at ${SECONDS}s"; archive
box 60 $M bench --ops gate_up down --model deepseek-v3 --tokens 1 8 64 512 4096 16384 --skew 1.5 \
  --budget-ms 60 --commit $COMMIT --json $R/sweep_skew_$COMMIT.json > $R/sweep_skew.log 2>&1
echo "skew at ${SECONDS}s"; archive
forced() {  # NAME KERNEL TOKENS...
  local name=$1 kernel=$2
  shift 2
  METRALE_CUDA_KERNEL=$kernel box 20 $M bench --ops dense --model all --tokens "$@" \
    --impls metrale --budget-ms 8 --json $R/forced/$name.json > $R/forced/$name.log 2>&1
}
for s in 1 2 4; do
  forced t2_s$s sm90-tiled:2:$s 48 64
  forced t3_s$s sm90-tiled:3:$s 48 64
  forced t6m_s$s sm90-tiled:6:$s 512
  forced t3m_s$s sm90-tiled:3:$s 512
done
forced t4m sm90-tiled:4 512
forced t7m sm90-tiled:7:1 512
echo "forced at ${SECONDS}s"; archive
python3 - $R/forced/*.json <<'PY'
import json, sys
for f in sys.argv[1:]:
    for r in json.load(open(f))['rows']:
        if r['impl'] == 'metrale':
            print(f"{f.split('/')[-1][:-5]:8s} {r['model'][:14]:14s} {r['tokens']:5d} {r['median_us']:9.2f}")
PY
cat $R/skipped.txt 2>/dev/null || true
