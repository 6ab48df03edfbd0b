#!/usr/bin/env bash
# A focused run on a GPU machine while a kernel is being worked on: build the release tree with
# every core, run the ctest tests matching a pattern, then `metrale bench` with the given
# arguments (skipped when none). gpu_run.sh is the full run (every test, sanitizers, CUTLASS).
#
#   scripts/gpu_iterate.sh OUTDIR TEST_REGEX [BENCH_ARGS...]
#
# OUTDIR/build.log, ctest.log, bench.log, bench.json; the last lines printed are the summary.
set -uo pipefail
cd "$(dirname "$0")/.."
if [[ $# -lt 2 ]]; then
  echo "usage: scripts/gpu_iterate.sh OUTDIR TEST_REGEX [BENCH_ARGS...]" >&2
  exit 2
fi
OUT=$(mkdir -p "$1" && cd "$1" && pwd)
REGEX=$2
shift 2
source scripts/gpu_build.sh
release_build "$OUT/build.log" -- -k 0
build_rc=$?
((build_rc != 0)) && grep -m 20 -E "error|FAILED" "$OUT/build.log"
ctest_summary="not run"
if [[ -n $REGEX && -f build/release/CTestTestfile.cmake ]]; then
  (cd build/release && timeout 400 ctest --output-on-failure -j 4 --timeout 300 -R "$REGEX") \
    >"$OUT/ctest.log" 2>&1
  ctest_summary=$(grep -E "tests passed|tests failed" "$OUT/ctest.log" | tail -1)
fi
bench_rc="not run"
if [[ $# -gt 0 && -x build/release/bin/metrale ]]; then
  build/release/bin/metrale bench "$@" --json "$OUT/bench.json" >"$OUT/bench.log" 2>&1
  bench_rc=$?
fi
echo "==== gpu_iterate: build rc=$build_rc; ctest: $ctest_summary; bench rc=$bench_rc ($SECONDS s)"
grep -E "^\s+[0-9]+ - .*\((Failed|Timeout|SEGFAULT|Subprocess aborted|Exception)\)" "$OUT/ctest.log" 2>/dev/null | head -20
grep -E "^FAIL |reproduce: |Failure|Expected|Which is" "$OUT/ctest.log" 2>/dev/null | head -20 | cut -c1-300
[[ -f $OUT/bench.log ]] && grep -E "metrale " "$OUT/bench.log" | head -80
exit 0
