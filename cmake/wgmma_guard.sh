#!/usr/bin/env bash
# The CUDA compiler launcher of the Hopper kernels (src/CMakeLists.txt): runs the compile and fails
# it when ptxas reports serialized wgmmas (C7514: "wgmma.mma_async instructions are serialized due
# to ..."). ptxas says so as info, not as a warning, and the kernel still runs correctly, with each
# wgmma waited for before the next is issued: the decode family's 128-row units, first built, lost
# their wgmma pipeline so (docs/perf.md, fortieth session).
log=$(mktemp)
trap 'rm -f "$log"' EXIT
"$@" 2>"$log"
status=$?
cat "$log" >&2
if grep -q "C7514" "$log"; then
  echo "wgmma_guard: ptxas serialized wgmmas (C7514) in the file compiled above" >&2
  exit 1
fi
exit "$status"
