#!/usr/bin/env bash
# One run on a GPU machine (the H200: 16 cores, CUDA 13 nvcc, cmake, ninja, python3, no internet):
# configure, build with every core, run every test, run compute-sanitizer over the small-shape
# subset, a short `metrale bench`, then the CUTLASS reference build and its tests in a separate
# build folder (so that a failure there cannot block the rest). Every step is time-boxed and the
# whole run stays under 9 minutes. Logs go to OUTDIR; the last lines printed are the summary.
#
#   scripts/gpu_run.sh OUTDIR
#
# OUTDIR/build.log, ctest.log, ctest.xml (JUnit), memcheck.log, racecheck.log, synccheck.log,
# bench.log, bench.json, cutlass_build.log, cutlass_tests.log, nvidia-smi.log.
set -uo pipefail
cd "$(dirname "$0")/.."

if [[ $# -ne 1 ]]; then
  echo "usage: scripts/gpu_run.sh OUTDIR" >&2
  exit 2
fi
OUT=$(mkdir -p "$1" && cd "$1" && pwd)
TOTAL_BUDGET=530          # seconds for the whole run (the caller's limit is 600)
JOBS=$(nproc)
declare -A RESULT         # step -> one line for the summary
STATUS=0                  # exit status: 1 when the build, a test or a sanitizer failed

log() { printf '[gpu_run %4ds] %s\n' "$SECONDS" "$*"; }
left() { echo $((TOTAL_BUDGET - SECONDS)); }
# step_timeout WANTED: WANTED seconds, or what is left of the budget minus a reserve.
step_timeout() {
  local wanted=$1 remaining
  remaining=$(($(left) - 20))
  ((remaining < wanted)) && wanted=$remaining
  ((wanted < 1)) && wanted=1
  echo "$wanted"
}

# ---- 1. environment: carried Debian packages, CUTLASS headers, the GPU ------------------------
log "installing the carried packages (.deps/*.deb)"
for f in .deps/*.deb; do
  [[ -e $f ]] || continue
  dpkg -x "$f" / || log "dpkg -x $f failed"
done
# .cutlass: scripts/fetch_cutlass.sh on the CPU machine (this one has no internet), carried.
if [[ -d "$PWD/.cutlass/include" ]]; then
  export CUTLASS_HOME="$PWD/.cutlass"
  log "CUTLASS_HOME=$CUTLASS_HOME"
fi
export PATH="$PATH:/usr/local/cuda/bin"
{
  date -u '+%Y-%m-%dT%H:%M:%SZ'
  echo "commit: $(git rev-parse HEAD 2>/dev/null || echo unknown)"
  nvidia-smi || echo "nvidia-smi failed"
  nvcc --version | tail -2
  cmake --version | head -1
} >"$OUT/nvidia-smi.log" 2>&1
grep -E "H200|H100|NVIDIA|Driver|commit|release" "$OUT/nvidia-smi.log" | head -6

# ---- 2. the main build: library, CLI, tests; no CUTLASS ---------------------------------------
log "configuring build/release"
timeout "$(step_timeout 90)" cmake -S . -B build/release -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_CUDA_ARCHITECTURES=90a-real -DMETRALE_CUDA=ON -DMETRALE_CUTLASS=OFF \
  >"$OUT/build.log" 2>&1
RESULT[configure]="configure rc=$?"
log "building with $JOBS jobs"
timeout "$(step_timeout 270)" cmake --build build/release --parallel "$JOBS" -- -k 0 \
  >>"$OUT/build.log" 2>&1
rc=$?
((rc != 0)) && STATUS=1
RESULT[build]="build rc=$rc ($(grep -c 'error' "$OUT/build.log") lines mention error)"
if ((rc != 0)); then
  log "build failed (rc=$rc); first errors:"
  grep -m 15 -E "error|FAILED" "$OUT/build.log"
fi

# ---- 3. every test ----------------------------------------------------------------------------
if [[ -f build/release/CTestTestfile.cmake ]]; then
  log "ctest (all tests)"
  (cd build/release && timeout "$(step_timeout 200)" ctest --output-on-failure -j 4 \
    --timeout 180 --output-junit "$OUT/ctest.xml") >"$OUT/ctest.log" 2>&1
  rc=$?
  ((rc != 0)) && STATUS=1
  summary_line=$(grep -E "tests passed|tests failed" "$OUT/ctest.log" | tail -1)
  skipped=$(grep -c "(Skipped)" "$OUT/ctest.log")
  RESULT[ctest]="ctest rc=$rc: ${summary_line:-no summary} ($skipped skipped)"
  grep -E "\*\*\*Failed|\(Failed\)|\(Timeout\)|\(SEGFAULT\)|Not Run" "$OUT/ctest.log" | head -20
else
  RESULT[ctest]="ctest: not run (no build)"
  STATUS=1
fi

# ---- 4. compute-sanitizer over the small-shape subset ----------------------------------------
SANITIZER=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer 2>/dev/null | head -1)
TEST_BIN=build/release/bin/metrale_test_cuda
for tool in memcheck racecheck synccheck; do
  if [[ -z $SANITIZER || ! -x $TEST_BIN ]]; then
    RESULT[$tool]="$tool: not run (compute-sanitizer or $TEST_BIN missing)"
    continue
  fi
  log "compute-sanitizer --tool $tool"
  timeout "$(step_timeout 75)" "$SANITIZER" --tool "$tool" --error-exitcode 3 \
    "$TEST_BIN" --gtest_filter='*Small*' >"$OUT/$tool.log" 2>&1
  rc=$?
  # memcheck and synccheck end with "ERROR SUMMARY: N errors", racecheck with "RACECHECK
  # SUMMARY: H hazards displayed (N errors, W warnings)".
  errors=$(grep -oE "ERROR SUMMARY: [0-9]+|SUMMARY: [0-9]+ hazards displayed \([0-9]+" \
    "$OUT/$tool.log" | tail -1 | grep -oE "[0-9]+$")
  [[ $rc -ne 0 || ${errors:-1} -ne 0 ]] && STATUS=1
  gtest=$(grep -E "^\[  (PASSED|FAILED)  \]" "$OUT/$tool.log" | head -2 | tr '\n' ' ')
  RESULT[$tool]="$tool rc=$rc: ${errors:-?} errors; $gtest"
done

# ---- 5. a short bench (the bench owns its flags; tolerated when absent) ----------------------
if [[ -x build/release/bin/metrale ]]; then
  log "metrale bench"
  # A short sweep: the full one is its own run (docs/perf.md), too long for this script's budget.
  timeout "$(step_timeout 90)" build/release/bin/metrale bench --model qwen3-30b-a3b deepseek-v3 \
    --tokens 1 64 4096 --budget-ms 50 --json "$OUT/bench.json" >"$OUT/bench.log" 2>&1
  rc=$?
  RESULT[bench]="bench rc=$rc ($(wc -l <"$OUT/bench.log") lines; json $([[ -s $OUT/bench.json ]] && echo written || echo absent))"
  # The CLI's own check, as a user would run it (the dequantizing cuBLASLt arm keeps every
  # active expert's bf16 weight in the workspace: give it room).
  RESULT[check]="check: $(METRALE_WORKSPACE_MB=20480 timeout 60 build/release/bin/metrale check --op grouped_gate_up_fused \
    --model deepseek-v3 --tokens 64 --mode realistic --backend all 2>&1 | tr '\n' ' ' | cut -c1-400)"
else
  RESULT[bench]="bench: not run (no metrale binary)"
fi

# ---- 6. the CUTLASS reference arm, separately, with what time is left -------------------------
if [[ -n ${CUTLASS_HOME:-} ]] && (($(left) > 120)); then
  log "configuring and building build/cutlass ($(left) s left)"
  {
    timeout "$(step_timeout 60)" cmake -S . -B build/cutlass -G Ninja -DCMAKE_BUILD_TYPE=Release \
      -DCMAKE_CUDA_ARCHITECTURES=90a-real -DMETRALE_CUDA=ON -DMETRALE_CUTLASS=ON &&
      timeout "$(step_timeout 400)" cmake --build build/cutlass --parallel "$JOBS" -- -k 0
  } >"$OUT/cutlass_build.log" 2>&1
  rc=$?
  RESULT[cutlass_build]="cutlass build rc=$rc"
  if [[ -x build/cutlass/bin/metrale_test_reference ]] && (($(left) > 30)); then
    timeout "$(step_timeout 200)" build/cutlass/bin/metrale_test_reference >"$OUT/cutlass_tests.log" 2>&1
    rc=$?
    RESULT[cutlass_tests]="cutlass tests rc=$rc: $(grep -E "^\[  (PASSED|FAILED)  \]|tests ran" "$OUT/cutlass_tests.log" | tr '\n' ' ')"
  else
    RESULT[cutlass_tests]="cutlass tests: not run"
  fi
else
  RESULT[cutlass_build]="cutlass: not built (no .cutlass headers or no time left: $(left) s)"
fi

# ---- summary (the tail of the output is what comes back) --------------------------------------
echo
echo "==== gpu_run summary ($SECONDS s, logs in $OUT) ===="
for step in configure build ctest memcheck racecheck synccheck bench check cutlass_build cutlass_tests; do
  [[ -n ${RESULT[$step]:-} ]] && echo "  ${RESULT[$step]}"
done
if [[ -f $OUT/ctest.log ]]; then
  echo "  failed tests:"
  grep -E "^\s+[0-9]+ - .*\((Failed|Timeout|SEGFAULT|Subprocess aborted|Exception)\)" "$OUT/ctest.log" | head -25
  echo "  first failing cases (reproduce with the command shown):"
  grep -E "^FAIL |reproduce: " "$OUT/ctest.log" | head -16 | cut -c1-300
fi
exit "$STATUS"
