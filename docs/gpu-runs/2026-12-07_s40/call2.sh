#!/usr/bin/env bash
# Fortieth session, call 2: 128-row decode units (branch unit128, 5051b9f: two wgmma M halves on
# the same activations and SFB tile up to 16 tokens, 2 k-tiles a stage) against main (336bbed).
# (Its 4-stage variant at 8 tokens, unit128-s4 ea4b273, was dropped from the packs after six
# starts got no machine, to leave the tests time in a shorter call.)
#  (a) decode rows of the five presets at T = 8, 64, 512, 2 alternated rounds;
#  (b) the GPU tests of unit128 (the variants' tree ends on it), the decode family's and the
#      grouped sweeps;
#  (c) ncu of the 8-token kernel at DeepSeek-V3 gate_up T = 64, main's and unit128's (raw page
#      kept: L2 and DRAM bytes); call 1's owed rows: pack and pack_unit with main's binary.
# (Call 1, the profiles and owed rows alone, got no machine: folded in here.)
# Never ran: ten starts got no machine. The branch is patches 0001-0004 beside this file (git am on
# main; the hashes change: name the new one below and in the pack). From main:
#   scripts/gpu_variants.sh pack 336bbed 5051b9f; carry .deps and .variants;
#   DEADLINE=560 bash docs/gpu-runs/2026-12-07_s40/call2.sh   (TOKENS=8,64 to shorten (a))
cd "$(dirname "$0")/../../.."
R=/tmp/r2; mkdir -p $R
source scripts/gpu_timebox.sh  # DEADLINE, left, box
archive() { cp /tmp/variants/*.json $R/ 2>/dev/null; tar -czf $OUT/call2.tgz -C /tmp r2; echo "archived at ${SECONDS}s"; }
nvidia-smi --query-gpu=name,clocks.max.sm,clocks.max.mem,memory.total --format=csv > $R/nvidia-smi.txt 2>&1
cat $R/nvidia-smi.txt
export ROUNDS=2
box 300 scripts/gpu_variants.sh run $R/var --model all --tokens ${TOKENS:-8,64,512} --ops gate_up,down \
  --budget-ms 20 > $R/variants.log 2>&1
echo "variants done at ${SECONDS}s"; tail -36 $R/variants.log
archive
box 200 scripts/gpu_variants.sh test $R \
  "DecodeFamily.*:ExactSweep.Grouped*:RealisticSweep.Grouped*:Consistency.*:GraphSmall.*:MoeLayer.ExactSweep*"
echo "tests done at ${SECONDS}s"; grep -E "PASSED|FAILED|tests ran|Failure" $R/tests.log | tail -12
archive
prof() {  # name binary: DeepSeek-V3 gate_up T = 64, one decode kernel launch
  [[ -x $2 ]] && TIMEOUT=$(( $(left) > 75 ? 60 : 5 )) scripts/gpu_profile.sh $R $1 decode_kernel $2 \
    bench --ops gate_up --model deepseek-v3 --tokens 64 --impls metrale --budget-ms 2
  echo "profile $1 at ${SECONDS}s"
}
prof u128_ds_T64 /tmp/variants/bin/5051b9f/metrale
prof main_ds_T64 /tmp/variants/bin/336bbed/metrale
archive
box 40 /tmp/variants/bin/336bbed/metrale bench --ops pack pack_unit --model all --impls metrale \
  --budget-ms 30 --json $R/pack.json > $R/pack.log 2>&1
archive
grep -h -E "pack" $R/pack.log | head -14
grep -h -E "Duration|DRAM Throughput|L2 Cache Throughput|Issue Slots Busy" $R/*_details.csv 2>/dev/null
cat $R/skipped.txt 2>/dev/null
