#!/usr/bin/env bash
# Forty-seventh session, call 3, on main's tree with the small dense rule (family.hpp's
# kStreamSmallBf16Bytes: a dense bf16 GEMM of 33-64 rows whose weights weigh at most 8 MiB and
# whose N / 16 CTAs fit one to an SM goes to the stream family's 64 x 16 configuration). Carry .deps.
#  (a) the stream family's GPU tests and the dense sweeps (every configuration forced; the
#      dispatcher's own choice in ExactSweep / RealisticSweep);
#  (b) the dense GEMM at M = 33, 40, 48, 56, 64 on the presets and on small_shapes.json (shapes
#      on both sides of both bounds), 2 alternated rounds: A the new choice, T the tiled family's
#      own plan (the choice before), W the 64 x 16 configuration forced everywhere; cuBLASLt once;
#  (c) ncu of the decode family's main kernel at DeepSeek-V3 gate_up T = 8 and 64 and of the
#      read stream (the ceiling) with the L2 traffic counted: whether its L2 load per DRAM byte
#      (its 50 % L2 hit rate at T = 64) is what holds it to the same time on an H100 and an H200.
#   COMMIT=$(git rev-parse --short HEAD) bash docs/gpu-runs/2026-12-07_s47/call3.sh
cd "$(dirname "$0")/../../.."
DEADLINE=${DEADLINE:-585}
NAME=call3 source scripts/gpu_call.sh  # R, box, archive, build, rows
build metrale_cli metrale_test_cuda
M=build/release/bin/metrale
T=build/release/bin/metrale_test_cuda
S=docs/gpu-runs/2026-12-07_s47/small_shapes.json
box 120 $T --gtest_filter="StreamFamily.*:ExactSweep.Bf16Gemm:RealisticSweep.Bf16Gemm" \
  > $R/tests.log 2>&1
echo "tests at ${SECONDS}s"; grep -E "^\[  |Failure|FAIL" $R/tests.log | tail -6; archive
dense() {  # NAME [bench options...]: the presets and the small shapes, M = 33-64, metrale only
  local name=$1; shift
  box 40 $M bench --ops dense --model all --tokens 33 40 48 56 64 "$@" --budget-ms 15 \
    --json $R/ab/$name.json > $R/ab/$name.log 2>&1
  box 40 $M bench --ops dense --shapes $S --tokens 33 40 48 56 64 "$@" --budget-ms 15 \
    --json $R/ab/${name}s.json > $R/ab/${name}s.log 2>&1
}
mkdir -p $R/ab
if grep -q "PASSED" $R/tests.log && ! grep -q "FAILED" $R/tests.log; then
  for round in 1 2; do
    for v in $(round_order $round A T W); do
      case $v in A) k= ;; T) k=sm90-tiled ;; W) k=sm90-stream:5 ;; esac
      METRALE_CUDA_KERNEL=$k dense $v$round --impls metrale
    done
    echo "round $round at ${SECONDS}s"
  done
  dense L --impls cublaslt
  python3 - $R/ab <<'PY'
import json, glob, os, sys
d = sys.argv[1]
for f in glob.glob(os.path.join(d, "*s.json")):  # one shape file's rows beside the presets'
    base = f[:-6] + ".json"
    if os.path.exists(base):
        a, b = json.load(open(base)), json.load(open(f))
        a["rows"] += b["rows"]; json.dump(a, open(base, "w")); os.remove(f)
PY
  python3 scripts/ab_table.py $R/ab --variants TW --labels A | tee $R/ab_table.txt
fi
archive
ncu_decode() {  # T
  box 60 ncu --clock-control none --section SpeedOfLight --section MemoryWorkloadAnalysis_Tables \
    --section SchedulerStats --section WarpStateStats --metrics \
    dram__bytes_read.sum,lts__t_sectors_srcunit_tex_op_read.sum,lts__t_sectors_srcunit_tex_op_read_lookup_hit.sum,l1tex__m_xbar2l1tex_read_bytes.sum,lts__t_bytes.sum,sm__inst_executed.sum \
    --kernel-name regex:"decode_kernel|read_stream" --launch-count 3 $M bench --ops gate_up \
    --model deepseek-v3 --tokens $1 --impls metrale --budget-ms 2 > $R/ncu_decode_T$1.log 2>&1
}
ncu_decode 64
ncu_decode 8
grep -E "decode_kernel|read_stream|Duration|DRAM Through|L2 Cache Through|dram__bytes|lts__t_|l1tex__m|Hit Rate|Issue Slots|No Eligible" \
  $R/ncu_decode_T64.log | head -60
archive
cat $R/skipped.txt 2>/dev/null || true
