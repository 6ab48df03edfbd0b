#!/usr/bin/env bash
# Forty-eighth session, call 2 (carry .deps; the machine of call1.sh, still warm): the GPU tests
# of the last variant call1.sh built (the fragment order's word layout), in its tree: every
# family's exact and realistic tests and the prepack conversions.
#   OUT=... bash docs/gpu-runs/2026-12-08_s48/call2.sh
cd "$(dirname "$0")/../../.."
OUT=${OUT:-/tmp/out}
V=$OUT/var
mkdir -p "$V"
bash scripts/gpu_variants.sh test "$V" \
  "DecodeFamily.*:TiledFamily.*:StreamFamily.*:ExactSweep.*:RealisticSweep.*:TiledExactSweep.*:CudaPrepack.*:DecodeCodes.*:DecodedTile.*:CudaMoe.*:MoeLayer.*:DecodeGluStaging.*:NonFiniteWeight.*"
echo "tests done at ${SECONDS}s"
tail -3 "$V/tests_build.log"
grep -E "^\[  PASSED|^\[  FAILED|^\[==========\]|tests, listed below" "$V/tests.log" | tail -20
