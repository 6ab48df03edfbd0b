#!/usr/bin/env bash
# Thirty-ninth session, call 1 (one call where machines are scarce; each step time-boxed so that
# the archive is written before the call's limit):
#  (a) main (dfdce16) against the loader variant (bd5a87e, branch v-loader: activation sources as
#      immediate offsets, the whole-stage test one compare) and v-unit (55cce68, on v-loader: the
#      consumer's next unit set and read only where a unit ends): decode rows of the five presets
#      at T = 8, 64, 512, 2 alternated rounds;
#  (b) the GPU tests of v-unit (its loader is v-loader's), built in (a)'s variant tree (incremental);
#  (c) with main's binary, ncu of the decode kernels (on an H200: DeepSeek-V3 gate_up T = 64 and
#      512; any card, last: Mixtral gate_up T = 1);
#  (d) Mixtral down and gate_up T = 1 with the split forced to 2, 7 and 14; pack and pack_unit.
# Ran once, cut to DEADLINE=170 on an H100 after seventeen starts got no machine: only the builds
# of (a) finished in the box (docs/perf.md, thirty-ninth session; call 2 then ran their benches:
# call2_ab_*). The variants are the patches beside this file; to run it again, from main:
#   git switch -c v-loader dfdce16 && git am docs/gpu-runs/2026-12-07_s39/0001-*.patch
#   git switch -c v-unit && git am docs/gpu-runs/2026-12-07_s39/0002-*.patch && git switch main
#   scripts/gpu_variants.sh pack dfdce16 v-loader v-unit
# and name the new hashes in the lines above where they differ. Then, on the device (carry .deps
# and .variants): DEADLINE=520 bash docs/gpu-runs/2026-12-07_s39/call1.sh
cd "$(dirname "$0")/../../.."
R=/tmp/r1; mkdir -p $R
DEADLINE=${DEADLINE:-520}
left() { echo $((DEADLINE - SECONDS)); }
box() { local want=$1; shift; local l=$(($(left) - 15)); ((l < want)) && want=$l; ((want < 5)) && { echo "skipped: $*" >> $R/skipped.txt; return 1; }; timeout "$want" "$@"; }
source scripts/gpu_build.sh
nvidia-smi --query-gpu=name,clocks.max.sm,clocks.max.mem,memory.total --format=csv > $R/nvidia-smi.txt 2>&1
cat $R/nvidia-smi.txt
export ROUNDS=2
box 240 scripts/gpu_variants.sh run $R/var --model all --tokens 8,64,512 --ops gate_up,down \
  --budget-ms 20 > $R/variants.log 2>&1
echo "variants done at ${SECONDS}s"; tail -36 $R/variants.log
tar -czf $OUT/call1.tgz -C /tmp r1  # early: the table survives a call cut short
BIN=/tmp/variants/bin/dfdce16/metrale
prof() {  # name model T: one decode kernel launch of a gate_up bench row
  TIMEOUT=$(($(left) > 60 ? 45 : 5)) scripts/gpu_profile.sh $R $1 decode_kernel $BIN bench --ops gate_up \
    --model $2 --tokens $3 --impls metrale --budget-ms 2
}
if [[ -d /tmp/variants/tree ]]; then
  (cd /tmp/variants/tree && export R && box 200 bash -c 'source scripts/gpu_build.sh
    release_build $R/tests_build.log --target metrale_test_cuda &&
    build/release/bin/metrale_test_cuda \
      --gtest_filter="DecodeFamily.*:ExactSweep.Grouped*:RealisticSweep.Grouped*:Consistency.*:GraphSmall.*:MoeLayer.ExactSweep"' \
    > $R/tests.log 2>&1)
fi
echo "tests done at ${SECONDS}s"; grep -E "PASSED|FAILED|tests ran" $R/tests.log | tail -8
if grep -q H200 $R/nvidia-smi.txt; then prof ds_T64 deepseek-v3 64; prof ds_T512 deepseek-v3 512; fi
echo "profiles done at ${SECONDS}s"
for round in 1 2; do
  for c in auto sm90-decode:0:2 sm90-decode:0:7 sm90-decode:0:14; do
    k=$c; [[ $c == auto ]] && k=
    box 20 env METRALE_CUDA_KERNEL=$k $BIN bench --ops down gate_up --model mixtral-8x7b --tokens 1 --impls metrale \
      --budget-ms 20 --json $R/split_${c//:/_}_$round.json > $R/split_${c//:/_}_$round.log 2>&1
  done
done
box 40 $BIN bench --ops pack pack_unit --model all --impls metrale --budget-ms 30 --json $R/pack.json > $R/pack.log 2>&1
prof mx_T1 mixtral-8x7b 1
cp /tmp/variants/*.json $R/var/ 2>/dev/null
tar -czf $OUT/call1.tgz -C /tmp r1
echo "archived at ${SECONDS}s"
grep -h -E "Duration|DRAM Throughput|L2 Cache Throughput|Issue Slots Busy|Memory Throughput" $R/*_details.csv 2>/dev/null
grep -h -E "pack" $R/pack.log | head -12
cat $R/skipped.txt 2>/dev/null
