#!/usr/bin/env bash
# Forty-first session: the fortieth's call 2 (docs/gpu-runs/2026-12-07_s40/call2.sh), run in two
# calls on one warm machine. Packs, from main:
#   scripts/gpu_variants.sh pack main unit128 unit128-w32    (6a342b3 0731f89 649a38b)
# unit128 = s40 patches 0001-0004 on main (128-row units up to 16 tokens); unit128-w32 = 0006 on
# top (128-row units at 32 tokens too). Carry .deps and .variants.
#   bash docs/gpu-runs/2026-12-07_s41/call.sh ab      A/B rows of the five presets, 2 rounds
#   bash docs/gpu-runs/2026-12-07_s41/call.sh tests   GPU tests in unit128-w32's tree, ncu, pack
# Both ran (H100, 08:00-08:06). Then, third call: branch unit-rows (5c306f4: the carve mended,
# 128-row tiles a configuration of their own, taken by rule) against main b82d26c:
#   scripts/gpu_variants.sh pack main unit-rows; bash docs/gpu-runs/2026-12-07_s41/call.sh rows
# Ran (H100, 08:15-08:20). Merged as ffcf2c0. Fourth call: branch rows32 (1fd71b2: 128-row tiles
# at 32 tokens by the same rule) against main ffcf2c0, T = 64 and 512:
#   scripts/gpu_variants.sh pack main rows32; TOKENS=64,512 bash docs/gpu-runs/2026-12-07_s41/call.sh rows
# Fifth call: memcheck and racecheck over SanitizerSmall.DecodeWideTiles (the 128-row tiles
# forced) and the grouped small cases, on main as carried: bash .../call.sh san
# Sixth call: the MoE layer, b82d26c (before the 128-row tiles) against main d84514b:
#   scripts/gpu_variants.sh pack b82d26c HEAD; bash .../call.sh moe
# Seventh call: 0ad73f2's rule (more than 64 expected experts under device offsets) on the layer,
# d84514b against main c29bcab:
#   scripts/gpu_variants.sh pack d84514b HEAD; ROUNDS=1 MODELS="mixtral-8x7b deepseek-v3" TOKENS=8,64 \
#   bash .../call.sh moe
cd "$(dirname "$0")/../../.."
R=/tmp/r41; mkdir -p $R
source scripts/gpu_timebox.sh  # DEADLINE, left, box
BASE=6a342b3 U128=0731f89
archive() { cp /tmp/variants/*.json $R/ 2>/dev/null; tar -czf $OUT/call_$1.tgz -C /tmp r41; echo "archived at ${SECONDS}s"; }
gpu_info() {
  nvidia-smi --query-gpu=name,clocks.max.sm,clocks.max.mem,memory.total --format=csv > $R/nvidia-smi.txt 2>&1
  cat $R/nvidia-smi.txt
}
ab_table() {  # OUTDIR LOG SECONDS BENCH_ARGS...: the packed variants' A/B, then its table
  local out=$1 log=$2 seconds=$3
  shift 3
  ROUNDS=${ROUNDS:-2} box $seconds scripts/gpu_variants.sh run $R/$out --model ${MODELS:-all} \
    --tokens ${TOKENS:-8,64,512} "$@" > $R/$log 2>&1
  echo "$out done at ${SECONDS}s"; tail -40 $R/$log
}
ab() {
  gpu_info
  ab_table var variants.log $((DEADLINE - 30)) --ops gate_up,down --budget-ms 20
  archive ab
}
prof() {  # name binary: DeepSeek-V3 gate_up T = 64, one decode kernel launch
  [[ -x $2 ]] && TIMEOUT=$(( $(left) > 75 ? 60 : 5 )) scripts/gpu_profile.sh $R $1 decode_kernel $2 \
    bench --ops gate_up --model deepseek-v3 --tokens 64 --impls metrale --budget-ms 2
  echo "profile $1 at ${SECONDS}s"
}
tests() {
  box 300 scripts/gpu_variants.sh test $R \
    "DecodeFamily.*:ExactSweep.Grouped*:RealisticSweep.Grouped*:Consistency.*:GraphSmall.*:MoeLayer.ExactSweep*"
  echo "tests done at ${SECONDS}s"; grep -E "PASSED|FAILED|tests ran|Failure" $R/tests.log | tail -12
  archive tests
  prof u128_ds_T64 /tmp/variants/bin/$U128/metrale
  prof main_ds_T64 /tmp/variants/bin/$BASE/metrale
  archive tests
  box 40 /tmp/variants/bin/$BASE/metrale bench --ops pack pack_unit --model all --impls metrale \
    --budget-ms 30 --json $R/pack.json > $R/pack.log 2>&1
  archive tests
  grep -h -E "pack" $R/pack.log | head -14
  grep -h -E "Duration|DRAM Throughput|L2 Cache Throughput|Issue Slots Busy" $R/*_details.csv 2>/dev/null
  cat $R/skipped.txt 2>/dev/null
}
rows() {  # call 3: A/B, then unit-rows' GPU tests (the variants' tree ends on it)
  gpu_info
  ab_table var variants.log 300 --ops gate_up,down --budget-ms 20
  archive rows
  box 240 scripts/gpu_variants.sh test $R "DecodeFamily.*:ExactSweep.Grouped*:RealisticSweep.Grouped*:\
Consistency.*:GraphSmall.*:MoeLayer.*:SanitizerSmall.Grouped*"
  echo "tests done at ${SECONDS}s"; grep -E "PASSED|FAILED|tests ran|Failure" $R/tests.log | tail -14
  archive rows
  cat $R/skipped.txt 2>/dev/null || true
}
san() {  # call 5: compute-sanitizer over the 128-row decode tiles (the tree as carried: main)
  bash -c 'source scripts/gpu_build.sh && release_build "$0" --target metrale_test_cuda' \
    $R/san_build.log
  echo "built at ${SECONDS}s: $(tail -1 $R/san_build.log)"
  local cs
  cs=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer | head -1)
  for tool in memcheck racecheck; do
    box 200 "$cs" --tool $tool --error-exitcode 3 build/release/bin/metrale_test_cuda \
      --gtest_filter='SanitizerSmall.DecodeWideTiles:SanitizerSmall.Grouped*' > $R/$tool.log 2>&1
    echo "$tool rc=$? at ${SECONDS}s"
    grep -E "ERROR SUMMARY|RACECHECK SUMMARY|PASSED|FAILED" $R/$tool.log
    archive san
  done
  cat $R/skipped.txt 2>/dev/null || true
}
moe() {  # call 6: the MoE layer (device offsets: the rule's Poisson estimate) before and after
  ab_table moe moe.log $((DEADLINE - 30)) --ops moe --budget-ms 10
  archive moe
}
"$@"
