#!/usr/bin/env bash
# Forty-sixth session, written for the next one (NOT RUN): the bf16-grouped (CUTLASS) arm beside
# main on an H200, for bench/results. The recorded sweeps since 1ccedc9 were built without CUTLASS,
# so check_targets compares prefill rows with the arm's rows of 170aa96 (2026-12-04). A build with
# CUTLASS (its grouped GEMM's instantiations: several minutes on a fresh machine), then metrale
# and the arm on gate_up and down at T = 512, 4096 and 16384, every preset, 60 ms a row, its JSON
# named for bench/results (an H100's rows must not go there). Carry .deps and .cutlass:
#   COMMIT=$(git rev-parse --short HEAD) bash docs/gpu-runs/2026-12-07_s46/cutlass_arm.sh
cd "$(dirname "$0")/../../.."
DEADLINE=${DEADLINE:-585}
NAME=cutlass source scripts/gpu_call.sh  # R, box, archive, rows; the packages, nvcc on PATH
export CUTLASS_HOME="$PWD/.cutlass" METRALE_COMMIT=${COMMIT:?name the commit}
[[ -d $CUTLASS_HOME/include ]] || { echo "no .cutlass carried"; exit 1; }
grep -q H200 "$R/nvidia-smi.txt" || { echo "not an H200: no rows for bench/results"; exit 0; }
{
  cmake -S . -B build/cutlass -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a-real \
    -DMETRALE_CUDA=ON -DMETRALE_CUTLASS=ON &&
    box 420 cmake --build build/cutlass --parallel "$(nproc)" --target metrale_cli
} > $R/build.log 2>&1
echo "built at ${SECONDS}s: $(tail -1 $R/build.log)"; archive
box 150 build/cutlass/bin/metrale bench --ops gate_up down --model all --tokens 512 4096 16384 \
  --impls metrale bf16-grouped --budget-ms 60 --step-timeout 60 --commit $COMMIT \
  --json $R/prefill_bf16grouped_$COMMIT.json > $R/bench.log 2>&1
echo "bench at ${SECONDS}s"; rows $R/prefill_bf16grouped_$COMMIT.json | head -70; archive
cat $R/skipped.txt 2>/dev/null || true
