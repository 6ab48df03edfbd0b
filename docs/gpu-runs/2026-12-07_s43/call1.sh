#!/usr/bin/env bash
# Forty-third session, call 1: the dense bf16 GEMM's stages copied by TMA (branch tiled-tma) against
# the same binary's cp.async copies (METRALE_CUDA_DENSE_COPY=cp.async), then the CTA-synchronised
# tiles and K splits forced with TMA, then the GPU tests of the tiled family's dense paths.
# The working tree as carried (carry .deps):  bash docs/gpu-runs/2026-12-07_s43/call1.sh
#  (a) the family's choice, TMA and cp.async alternated, 2 rounds, M = 16-64, 512, 4096, 16384,
#      cuBLASLt's best heuristic beside it (first TMA round);
#  (b) (FORCED=1 only: left out of the run for device time) forced with TMA: tiles 2-3 at 1, 2 and 4 K ranges (M = 32-64), 6 at 1-3 (M = 512), 7 and
#      the warp-specialised 4 whole (M = 512-16384);
#  (c) the tests (TiledFamily's dense and split tests, the bf16 sweeps, consistency, graphs), then
#      compute-sanitizer (memcheck, racecheck) on one dense TMA case a tile.
cd "$(dirname "$0")/../../.."
R=/tmp/r43a; mkdir -p $R/forced
DEADLINE=${DEADLINE:-420}
source scripts/gpu_timebox.sh
archive() { tar -czf $OUT/call1.tgz -C /tmp r43a; echo "archived at ${SECONDS}s"; }
nvidia-smi --query-gpu=name,clocks.max.sm,clocks.max.mem,memory.total --format=csv > $R/nvidia-smi.txt 2>&1
cat $R/nvidia-smi.txt
bash -c 'source scripts/gpu_build.sh && release_build "$0" --target metrale_cli' $R/build.log
echo "built at ${SECONDS}s: $(tail -1 $R/build.log)"
M=build/release/bin/metrale
TOK="16 32 48 64 512 4096 16384"
for round in $(seq 1 ${ROUNDS:-2}); do
  order="tma cpa"; ((round == 2)) && order="cpa tma"
  for side in $order; do
    if [[ $side == tma ]]; then
      box 70 $M bench --ops dense --model all --tokens $TOK --impls metrale $( ((round == 1)) && echo cublaslt) --budget-ms 12 \
        --json $R/tma$round.json > $R/tma$round.log 2>&1
    else
      METRALE_CUDA_DENSE_COPY=cp.async box 50 $M bench --ops dense --model all --tokens $TOK \
        --impls metrale --budget-ms 12 --json $R/cpa$round.json > $R/cpa$round.log 2>&1
    fi
    echo "$side$round at ${SECONDS}s"
  done
done
archive
forced() {  # NAME KERNEL TOKENS...
  local name=$1 kernel=$2
  shift 2
  METRALE_CUDA_KERNEL=$kernel box 25 $M bench --ops dense --model all --tokens "$@" \
    --impls metrale --budget-ms 8 --json $R/forced/$name.json > $R/forced/$name.log 2>&1
}
((FORCED)) && {
  for s in 1 2 4; do
    forced t2_s$s sm90-tiled:2:$s 32 48 64
    forced t3_s$s sm90-tiled:3:$s 48 64
  done
  for s in 1 2 3; do forced t6m_s$s sm90-tiled:6:$s 512; done
  forced t7l_s1 sm90-tiled:7:1 4096 16384
  forced t4l sm90-tiled:4 512 4096 16384
  echo "forced at ${SECONDS}s"; archive
}
box $(( $(left) - 75 )) bash -c 'source scripts/gpu_build.sh && release_build "$0" --target metrale_test_cuda' $R/tests_build.log
echo "tests built at ${SECONDS}s: $(tail -1 $R/tests_build.log)"
T=build/release/bin/metrale_test_cuda
box $(( $(left) - 35 )) $T --gtest_filter="TiledFamily.DenseCopiesByTmaAndCpAsyncExact:TiledFamily.EveryTileDenseExact:TiledFamily.Dense*:\
TiledFamily.Bf16KSplitsExactAndRealistic:ExactSweep.Bf16Gemm:RealisticSweep.Bf16Gemm:Consistency.*:GraphSmall.*" \
  > $R/tests.log 2>&1
echo "tests done at ${SECONDS}s"; grep -E "PASSED|FAILED|tests ran|Failure" $R/tests.log | tail -12
archive
for tool in memcheck racecheck; do
  box $(( $(left) > 35 ? 20 : 5 )) compute-sanitizer --tool $tool --error-exitcode 9 $T \
    --gtest_filter="TiledFamily.DenseCopiesByTmaAndCpAsyncExact" > $R/sanitizer_$tool.log 2>&1
  echo "$tool rc=$? at ${SECONDS}s"; tail -3 $R/sanitizer_$tool.log
done
archive
cat $R/skipped.txt 2>/dev/null || true
