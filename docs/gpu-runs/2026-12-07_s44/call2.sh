#!/usr/bin/env bash
# Forty-fourth session, call 2: the dense GEMM's deeper TMA ring (2dbc095: tiles that hold their
# multiprocessor alone run the deepest ring that fits: the CTA-synchronised 128-token tile 4 -> 6
# stages, the warp-specialised one 4 -> 5, the 64-token tile 6 -> 8) against main before it
# (97e726d), in one call:
#  (a) the dense rows of every preset at M = 48, 64, 512, 4096, 16384, both builds, 3 alternated
#      rounds (scripts/gpu_variants.sh), then cuBLASLt's best heuristic on the same rows;
#  (b) the GPU tests on 2dbc095: the tiled family (every tile with TMA and cp.async, bit for
#      bit), the decode family, the grouped exact sweeps, consistency;
#  (c) with the time left, call1.sh's (b)-(c): tiles and K splits forced at M = 48-512 (JSON),
#      ncu's full set on metrale's kernel at Qwen3-30B M = 512 (is the L2 busy?) and the kernels
#      cuBLASLt runs there, by name.
# From main: scripts/gpu_variants.sh pack 97e726d 2dbc095; carry .deps and .variants;
#   bash docs/gpu-runs/2026-12-07_s44/call2.sh
cd "$(dirname "$0")/../../.."
R=/tmp/r2; mkdir -p $R/forced $R/ncu
DEADLINE=${DEADLINE:-575}
source scripts/gpu_timebox.sh
archive() { tar -czf $OUT/call2.tgz -C /tmp r2; echo "archived at ${SECONDS}s"; }
nvidia-smi --query-gpu=name,clocks.max.sm,clocks.max.mem,memory.total --format=csv > $R/nvidia-smi.txt 2>&1
cat $R/nvidia-smi.txt
TOK=48,64,512,4096,16384
ROUNDS=3 box 300 scripts/gpu_variants.sh run $R/var --model all --tokens $TOK --ops dense \
  --budget-ms 12 > $R/variants.log 2>&1
echo "variants at ${SECONDS}s"; tail -32 $R/var/table.txt 2>/dev/null; archive
M=/tmp/variants/bin/2dbc095/metrale
box 30 $M bench --ops dense --model all --tokens ${TOK//,/ } --impls cublaslt --budget-ms 12 \
  --json $R/cublaslt.json > $R/cublaslt.log 2>&1
box 150 scripts/gpu_variants.sh test $R "TiledFamily.*:DecodeFamily.*:ExactSweep.Grouped*:Consistency.*"
echo "tests at ${SECONDS}s"; grep -E "PASSED|FAILED|tests ran|Failure" $R/tests.log | tail -8; archive
forced() {  # NAME KERNEL TOKENS...
  local name=$1 kernel=$2
  shift 2
  METRALE_CUDA_KERNEL=$kernel box 15 $M bench --ops dense --model all --tokens "$@" \
    --impls metrale --budget-ms 6 --json $R/forced/$name.json > $R/forced/$name.log 2>&1
}
for s in 1 2 4; do
  forced t6_s$s sm90-tiled:6:$s 512
  forced t3_s$s sm90-tiled:3:$s 48 64 512
done
forced t4 sm90-tiled:4 512
forced t2_s2 sm90-tiled:2:2 48 64
forced st5 sm90-stream:5 48 64
echo "forced at ${SECONDS}s"; archive
names() {  # NAME MODEL TOKENS: cuBLASLt's kernels of one row, by name and duration
  box 20 ncu --clock-control none --metrics gpu__time_duration.sum --launch-skip 6 --launch-count 3 \
    $M bench --ops dense --model $2 --tokens $3 --impls cublaslt --budget-ms 1 > $R/ncu/$1.log 2>&1
}
(( $(left) > 55 )) && TIMEOUT=40 scripts/gpu_profile.sh $R/prof qwen_512 grouped_gemm $M bench \
  --ops dense --model qwen3-30b-a3b --tokens 512 --impls metrale --budget-ms 1
echo "profile at ${SECONDS}s"; archive
names qwen_512 qwen3-30b-a3b 512
names qwen_64 qwen3-30b-a3b 64
names next_512 qwen3-next-80b-a3b 512
echo "ncu at ${SECONDS}s"; archive
python3 - $R/cublaslt.json $R/forced/*.json <<'PY'
import json, sys
for f in sys.argv[1:]:
    try: rows = json.load(open(f))['rows']
    except Exception: continue
    for r in rows:
        if r.get('status') == 'ok':
            print(f"{f.split('/')[-1][:-5]:9s} {r['impl'][:8]:8s} {r['model'][:14]:14s} {r['tokens']:5d} "
                  f"{r['median_us']:9.2f} {r.get('kernel', '')}")
PY
grep -h -E "^  [a-zA-Z_].*\(|gpu__time_duration" $R/ncu/*.log | cut -c1-220 | head -40
grep -h -E "Duration|DRAM Throughput|L2 Cache Throughput|L1/TEX Cache Throughput|Compute \(SM\) Throughput|Issue Slots Busy" \
  $R/prof/*_details.csv 2>/dev/null | cut -c1-160
cat $R/skipped.txt 2>/dev/null || true
