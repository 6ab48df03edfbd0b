#!/usr/bin/env bash
# One kernel of one run profiled on a GPU machine with ncu (`--set full`, the card's own clocks),
# its report exported as CSV pages that read anywhere, and the report itself removed (it is large,
# and a device call brings back only a few files: tar OUTDIR into one):
#   OUTDIR/NAME_details.csv  ncu's sections (duration, throughputs, occupancy, issue);
#   OUTDIR/NAME_raw.csv      every metric collected;
#   OUTDIR/NAME_sass.csv     per-instruction executed counts and stall samples
#                            (scripts/ncu_stalls.py reads it);
#   OUTDIR/NAME.log          the profiled run's output.
#
#   scripts/gpu_profile.sh OUTDIR NAME KERNEL_REGEX COMMAND...
#   e.g. scripts/gpu_profile.sh "$OUT" ds_T64 decode_kernel \
#          build/release/bin/metrale bench --ops gate_up --model deepseek-v3 --tokens 64 \
#          --impls metrale --budget-ms 2
#
# LAUNCH_SKIP (default 3: past the bench's warm-up launches), LAUNCH_COUNT (1) and TIMEOUT
# (seconds, 60) set ncu's window and the run's limit.
set -uo pipefail
if [[ $# -lt 4 ]]; then
  echo "usage: scripts/gpu_profile.sh OUTDIR NAME KERNEL_REGEX COMMAND..." >&2
  exit 2
fi
out=$(mkdir -p "$1" && cd "$1" && pwd)
name=$2
kernel=$3
shift 3
report="$out/$name"
timeout "${TIMEOUT:-60}" ncu --clock-control none --set full --import-source no \
  -k "regex:$kernel" --launch-skip "${LAUNCH_SKIP:-3}" --launch-count "${LAUNCH_COUNT:-1}" \
  -o "$report" "$@" >"$report.log" 2>&1
status=$?
if [[ ! -e $report.ncu-rep ]]; then
  echo "gpu_profile: no report for $name (status $status): $(tail -2 "$report.log")" >&2
  exit 1
fi
ncu --import "$report.ncu-rep" --page details --csv >"${report}_details.csv"
ncu --import "$report.ncu-rep" --page raw --csv >"${report}_raw.csv"
ncu --import "$report.ncu-rep" --page source --csv --print-source sass >"${report}_sass.csv"
rm -f "$report.ncu-rep"
