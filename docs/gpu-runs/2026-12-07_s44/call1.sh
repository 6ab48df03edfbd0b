#!/usr/bin/env bash
# Forty-fourth session, call 1 (main 25d61ac): (a) the NVFP4 and decode GPU tests at main, since
# GroupedParams grew TMA maps in the forty-third session and only the dense tests ran after it;
# (b) the dense GEMM where it stays under 0.9x cuBLASLt (M = 48, 64, 512): the family's choice and
# cuBLASLt in the same run, then every tile and K split forced (JSON-parsed: the forty-third
# session's forced rows were lost to a text column); (c) the kernels cuBLASLt and metrale launch
# there, by name and duration (ncu, one metric): the tile and split-K cuBLASLt runs; (d) ncu's
# full set on metrale's kernel at Qwen3-Next M = 512 (0.40x) and Qwen3-30B M = 64 (0.61x).
# On an H200, the recorded sweep of main (every op and preset, 60 ms a row, and DeepSeek-V3 with
# --skew 1.5) runs after the tests, and (b)-(d) get what time is left.
#   COMMIT=$(git rev-parse --short HEAD) bash docs/gpu-runs/2026-12-07_s44/call1.sh  (carry .deps)
cd "$(dirname "$0")/../../.."
R=/tmp/r1; mkdir -p $R/forced $R/ncu
DEADLINE=${DEADLINE:-575}
source scripts/gpu_timebox.sh
archive() { tar -czf $OUT/call1.tgz -C /tmp r1; echo "archived at ${SECONDS}s"; }
nvidia-smi --query-gpu=name,clocks.max.sm,clocks.max.mem,memory.total --format=csv > $R/nvidia-smi.txt 2>&1
cat $R/nvidia-smi.txt
export METRALE_COMMIT=${COMMIT:?name the commit the tree holds}
bash -c 'source scripts/gpu_build.sh && release_build "$0" --target metrale_cli metrale_test_cuda' $R/build.log
echo "built at ${SECONDS}s: $(tail -1 $R/build.log)"
M=build/release/bin/metrale
box 90 build/release/bin/metrale_test_cuda \
  --gtest_filter="TiledFamily.*:DecodeFamily.*:ExactSweep.Grouped*:Consistency.*" > $R/tests.log 2>&1
echo "tests at ${SECONDS}s"; grep -E "PASSED|FAILED|tests ran|Failure" $R/tests.log | tail -8; archive
if grep -q H200 $R/nvidia-smi.txt; then  # the recorded sweep first: check_targets reads H200 sweeps only
  box 300 $M bench --ops gate_up down moe dense pack --model all --budget-ms 60 --step-timeout 60 \
    --commit $COMMIT --json $R/sweep_$COMMIT.json > $R/sweep.log 2>&1
  echo "sweep at ${SECONDS}s"; archive
  box 45 $M bench --ops gate_up down --model deepseek-v3 --tokens 1 8 64 512 4096 16384 --skew 1.5 \
    --budget-ms 60 --commit $COMMIT --json $R/sweep_skew_$COMMIT.json > $R/sweep_skew.log 2>&1
  echo "skew at ${SECONDS}s"; archive
fi
box 40 $M bench --ops dense --model all --tokens 48 64 512 --impls metrale cublaslt --budget-ms 20 \
  --commit $COMMIT --json $R/dense_ref.json > $R/dense_ref.log 2>&1
forced() {  # NAME KERNEL TOKENS...
  local name=$1 kernel=$2
  shift 2
  METRALE_CUDA_KERNEL=$kernel box 20 $M bench --ops dense --model all --tokens "$@" \
    --impls metrale --budget-ms 8 --json $R/forced/$name.json > $R/forced/$name.log 2>&1
}
for s in 1 2 4; do
  forced t2_s$s sm90-tiled:2:$s 48 64
  forced t3_s$s sm90-tiled:3:$s 48 64 512
  forced t6_s$s sm90-tiled:6:$s 512
done
forced t4 sm90-tiled:4 512
forced t7 sm90-tiled:7:1 512
forced t3_s8 sm90-tiled:3:8 48 64 512
forced st3 sm90-stream:3 48 64
forced st5 sm90-stream:5 48 64
echo "forced at ${SECONDS}s"; archive
names() {  # NAME IMPL MODEL TOKENS: the kernels of one row, by name and duration
  box 25 ncu --clock-control none --metrics gpu__time_duration.sum --launch-skip 6 --launch-count 4 \
    $M bench --ops dense --model $3 --tokens $4 --impls $2 --budget-ms 1 > $R/ncu/$1.log 2>&1
}
for m in qwen3-30b-a3b gpt-oss-120b deepseek-v3; do
  for t in 64 512; do names lt_${m}_$t cublaslt $m $t; names me_${m}_$t metrale $m $t; done
done
echo "ncu at ${SECONDS}s"; archive
prof() {  # NAME MODEL TOKENS: metrale's GEMM kernel of one dense row, ncu --set full
  (( $(left) > 60 )) && TIMEOUT=40 scripts/gpu_profile.sh $R/prof $1 grouped_gemm $M bench --ops dense \
    --model $2 --tokens $3 --impls metrale --budget-ms 1
  echo "profile $1 at ${SECONDS}s"
}
prof next_512 qwen3-next-80b-a3b 512
prof qwen_64 qwen3-30b-a3b 64
archive
python3 - $R/dense_ref.json $R/forced/*.json <<'PY'
import json, sys
for f in sys.argv[1:]:
    for r in json.load(open(f))['rows']:
        if r.get('status') == 'ok':
            print(f"{f.split('/')[-1][:-5]:9s} {r['impl'][:8]:8s} {r['model'][:14]:14s} {r['tokens']:5d} "
                  f"{r['median_us']:9.2f} {r.get('kernel', '')}")
PY
grep -h -E "^  [a-zA-Z_].*\(|gpu__time_duration" $R/ncu/*.log | head -80
grep -h -E "Duration|DRAM Throughput|Compute \(SM\) Throughput|Registers Per|Achieved Occupancy|Grid Size|Block Size" \
  $R/prof/*_details.csv 2>/dev/null | cut -c1-160
cat $R/skipped.txt 2>/dev/null || true
