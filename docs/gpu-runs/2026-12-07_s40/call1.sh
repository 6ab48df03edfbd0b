#!/usr/bin/env bash
# Fortieth session, call 1 (main 336bbed): what bounds the 8-token decode kernel on the card that
# comes, and the rows the thirty-ninth session owed.
#  (a) ncu (--set full, raw page kept: L2 and DRAM bytes) of decode_kernel at DeepSeek-V3 gate_up
#      T = 8 and T = 64 (the 8-token kernel) and T = 512 (the 32-token one);
#  (b) pack and pack_unit, the five presets;
#  (c) Mixtral down and gate_up T = 1 with the decode split forced to 2, 7 and 14, 2 rounds.
# Every step time-boxed; the archive written after each, so a call cut short still returns data.
# Two starts got no machine; its steps (a) and (b) were folded into call2.sh, which never ran either
# (docs/perf.md, fortieth session).
#   DEADLINE=560 bash docs/gpu-runs/2026-12-07_s40/call1.sh   (carry .deps)
cd "$(dirname "$0")/../../.."
R=/tmp/r1; mkdir -p $R
source scripts/gpu_timebox.sh  # DEADLINE, left, box
archive() { tar -czf $OUT/call1.tgz -C /tmp r1; echo "archived at ${SECONDS}s"; }
source scripts/gpu_build.sh
nvidia-smi --query-gpu=name,clocks.max.sm,clocks.max.mem,memory.total --format=csv > $R/nvidia-smi.txt 2>&1
cat $R/nvidia-smi.txt
box 200 bash -c 'source scripts/gpu_build.sh; release_build '$R'/build.log --target metrale_cli' || { tail -20 $R/build.log; archive; exit 1; }
echo "built at ${SECONDS}s"
BIN=build/release/bin/metrale
prof() {  # name model T
  TIMEOUT=$(( $(left) > 75 ? 60 : 5 )) scripts/gpu_profile.sh $R $1 decode_kernel $BIN bench --ops gate_up \
    --model $2 --tokens $3 --impls metrale --budget-ms 2
  echo "profile $1 at ${SECONDS}s"
}
prof ds_T8 deepseek-v3 8
prof ds_T64 deepseek-v3 64
archive
box 40 $BIN bench --ops pack pack_unit --model all --impls metrale --budget-ms 30 --json $R/pack.json > $R/pack.log 2>&1
archive
for round in 1 2; do
  for c in auto sm90-decode:0:2 sm90-decode:0:7 sm90-decode:0:14; do
    k=$c; [[ $c == auto ]] && k=
    box 20 env METRALE_CUDA_KERNEL=$k $BIN bench --ops down gate_up --model mixtral-8x7b --tokens 1 --impls metrale \
      --budget-ms 20 --json $R/split_${c//:/_}_$round.json > $R/split_${c//:/_}_$round.log 2>&1
  done
done
archive
prof ds_T512 deepseek-v3 512
archive
grep -h -E "Duration|DRAM Throughput|L2 Cache Throughput|Issue Slots Busy|Memory Throughput" $R/*_details.csv 2>/dev/null
grep -h -E "pack" $R/pack.log | head -14
cat $R/skipped.txt 2>/dev/null
