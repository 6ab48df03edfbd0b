#!/usr/bin/env bash
# Builds the libFuzzer harnesses (the `fuzz` preset: clang, ASan + UBSan, CPU only) and runs each
# for SECONDS seconds over its corpus, tests/fuzz/corpus/<harness> (new inputs are added there).
# A finding leaves its reproducer in tests/fuzz/crashes/ and makes the script exit non-zero; the
# log of each run is build/fuzz/<harness>.log. One summary line per harness: executions, rate,
# coverage and corpus size. Usage: scripts/fuzz.sh SECONDS [harness ...] (default: all three).
# Reproduce a finding: build/fuzz/bin/<harness> tests/fuzz/crashes/<file>.
set -euo pipefail
cd "$(dirname "$0")/.."

seconds=${1:?usage: scripts/fuzz.sh SECONDS [harness ...]}
shift
harnesses=("$@")
if [[ ${#harnesses[@]} -eq 0 ]]; then
  harnesses=(fuzz_abi_single fuzz_abi_grouped fuzz_quantize_input)
fi

scripts/deps.sh
cmake --preset fuzz >/dev/null
cmake --build --preset fuzz --parallel "$(nproc)"

mkdir -p tests/fuzz/crashes
status=0
for harness in "${harnesses[@]}"; do
  corpus=tests/fuzz/corpus/$harness
  log=build/fuzz/$harness.log
  mkdir -p "$corpus"
  # -timeout: no input may take 20 s; -rss_limit_mb: nor 4 GiB (the harnesses' shapes are small).
  if ! "build/fuzz/bin/$harness" -max_total_time="$seconds" -print_final_stats=1 -timeout=20 \
      -rss_limit_mb=4096 -artifact_prefix="tests/fuzz/crashes/$harness-" "$corpus" >"$log" 2>&1; then
    echo "fuzz: $harness FAILED; reproducer in tests/fuzz/crashes/, log $log:"
    tail -n 60 "$log"
    status=1
  fi
  runs=$(awk '/stat::number_of_executed_units/ {print $2}' "$log")
  rate=$(awk '/stat::average_exec_per_sec/ {print $2}' "$log")
  cov=$(grep -o 'cov: [0-9]*' "$log" | tail -n 1 || true)
  echo "fuzz: $harness: ${runs:-?} executions in ${seconds} s (${rate:-?}/s), ${cov:-cov: ?}," \
       "corpus $(find "$corpus" -type f | wc -l) inputs"
done
exit "$status"
