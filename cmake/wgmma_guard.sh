#!/usr/bin/env bash
# The CUDA compiler launcher of the Hopper kernels (src/CMakeLists.txt): runs the compile and fails
# it when ptxas reports serialized wgmmas ("Potential Performance Loss: wgmma.mma_async
# instructions are serialized due to ...", under several codes: C7514 for an accumulator read
# between wgmmas in flight, C7511 for too few registers, others for calls or ill-formed stages).
# ptxas says so as info, not as a warning, and the kernel still runs correctly, with each wgmma
# waited for before the next is issued: the decode family's 128-row units, first built, lost their
# wgmma pipeline so (docs/perf.md, fortieth session). tests/build/wgmma_guard_test.cmake checks
# the guard against ptxas itself.
log=$(mktemp)
trap 'rm -f "$log"' EXIT
"$@" 2>"$log"
status=$?
cat "$log" >&2
if grep -q "wgmma.mma_async instructions are serialized" "$log"; then
  echo "wgmma_guard: ptxas serialized wgmmas in the file compiled above" >&2
  exit 1
fi
exit "$status"
