#!/usr/bin/env bash
# Forty-third session, call 2: after call 1's racecheck found the warp-specialised TMA producer's
# tile walk racing on the locate scratch (no barrier between one tile's read of its place and the
# next locate's write), fixed in the working tree: racecheck on TiledFamily.DenseCopiesByTma*
# again, the dense tests, then the 32- and 64-token tiles forced at M = 48-64 and the wide tiles at
# M = 512, with TMA. The working tree as carried (carry .deps):
#   bash docs/gpu-runs/2026-12-07_s43/call2.sh   (prints everything; $OUT gets the logs)
# As run, the forced rows' filter kept the bench's progress lines, not its result lines: the
# forced times did not come back (the run's records: call2_tests_racecheck.txt).
cd "$(dirname "$0")/../../.."
source scripts/gpu_build.sh
R=$OUT; M=build/release/bin/metrale; T=build/release/bin/metrale_test_cuda
release_build $R/build.log --target metrale_cli metrale_test_cuda
echo "built $SECONDS: $(tail -1 $R/build.log)"
timeout 100 compute-sanitizer --tool racecheck --error-exitcode 9 $T \
  --gtest_filter=TiledFamily.DenseCopiesByTmaAndCpAsyncExact > $R/race.log 2>&1
echo "race rc=$? $SECONDS"; grep -E "RACECHECK SUMMARY|PASSED|FAILED|Error" $R/race.log | head -5
timeout 40 $T --gtest_filter='TiledFamily.DenseCopies*:TiledFamily.EveryTileDenseExact:TiledFamily.Bf16KSplits*:TiledFamily.PersistentTilesExact:ExactSweep.Bf16Gemm' \
  > $R/tests.log 2>&1
grep -E "PASSED|FAILED|tests ran" $R/tests.log; echo "tests $SECONDS"
forced() {  # SECONDS_CAP TOKENS CONFIG...
  local cap=$1 tokens=$2
  shift 2
  for c in "$@"; do
    ((SECONDS > cap)) && break
    METRALE_CUDA_KERNEL=sm90-tiled:$c timeout 15 $M bench --ops dense --model all --tokens $tokens \
      --impls metrale --budget-ms 8 2>&1 | grep -E "dense" | awk -v c=$c '{print c, $1, $3, $6}'
  done
}
forced 250 "48 64" 2:1 2:2 2:4 3:1 3:2 3:4
echo "forced $SECONDS"
forced 270 512 6:1 6:2 6:3 4 7:1
echo "done $SECONDS"
