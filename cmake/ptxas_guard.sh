#!/usr/bin/env bash
# The CUDA compiler launcher of the Hopper kernels (src/CMakeLists.txt): runs the compile and fails
# it when ptxas reports either of two losses that leave the kernels correct but slow:
# - serialized wgmmas ("Potential Performance Loss: wgmma.mma_async instructions are serialized
#   due to ...", under several codes: C7514 for an accumulator read between wgmmas in flight,
#   C7511 for too few registers, others for calls or ill-formed stages). ptxas says so as info,
#   not as a warning, and each wgmma is then waited for before the next is issued: the decode
#   family's 128-row units, first built, lost their wgmma pipeline so (docs/perf.md, fortieth
#   session);
# - a kernel spilling more than kSpillBudget bytes of registers (the build asks ptxas to warn of
#   spills): a change that took register moves out of the decode family's 8-token kernel made
#   its 16- and 32-token kernels spill 298-474 bytes and run Mixtral's T = 64 rows 1.7x slower
#   (docs/perf.md, forty-eighth session), where every kernel then spilled at most 72.
# tests/build/ptxas_guard_test.cmake checks the guard against ptxas itself.
kSpillBudget=128
log=$(mktemp)
trap 'rm -f "$log"' EXIT
"$@" 2>"$log"
status=$?
cat "$log" >&2
if grep -q "wgmma.mma_async instructions are serialized" "$log"; then
  echo "ptxas_guard: ptxas serialized wgmmas in the file compiled above" >&2
  exit 1
fi
spilling=$(sed -nE "s/.*spilled to local memory in function '([^']*)', ([0-9]+) bytes spill stores.*/\2 \1/p" \
  "$log" | awk -v budget=$kSpillBudget '$1 > budget')
if [[ -n $spilling ]]; then
  echo "ptxas_guard: kernels spill more than $kSpillBudget bytes (spill stores, function):" >&2
  echo "$spilling" >&2
  exit 1
fi
exit "$status"
