#!/usr/bin/env bash
# Forty-eighth session, call 1 (carry .deps .variants): the decode's instructions a word, three
# builds in one call (scripts/gpu_variants.sh), packed on the CPU machine with
#   scripts/gpu_variants.sh pack 4594f87 d01a849 dc9392b
# 4594f87 main before; d01a849 the stage loop without the unit copy; dc9392b with the fragment
# order's word layout too. `metrale bench` of gate_up and down on every preset at T = 1, 8, 64
# and 4096, 2 rounds alternated, prepacked weights (the bench's default), then the GPU tests of
# the last variant when time is left (call2.sh otherwise, on the same warm machine).
#   OUT=... bash docs/gpu-runs/2026-12-08_s48/call1.sh
cd "$(dirname "$0")/../../.."
OUT=${OUT:-/tmp/out}
V=$OUT/var
mkdir -p "$V"
nvidia-smi --query-gpu=name,clocks.max.sm,clocks.max.mem --format=csv,noheader | tee "$V/gpu.txt"
timeout 450 bash scripts/gpu_variants.sh run "$V" --ops gate_up down --model all \
  --tokens 1 8 64 4096 --budget-ms 15 >"$V/run.log" 2>&1
echo "variants done at ${SECONDS}s"
grep -E "^built|failed" "$V/run.log"
cat "$V/table.txt" 2>/dev/null | head -60
if ((SECONDS < 380)); then
  timeout $((575 - SECONDS)) bash docs/gpu-runs/2026-12-08_s48/call2.sh
fi
