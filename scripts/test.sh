#!/usr/bin/env bash
# Builds metrale with the ci preset (RelWithDebInfo, warnings as errors, the CUDA code compiled
# when nvcc is present, CUTLASS off) on all cores and runs every test (the install test among
# them); GPU tests skip, visibly, on a machine without a GPU. Then the Python package and its
# pytest suite (scripts/test_python.sh), the same C++ tests under ASan and UBSan (the asan preset,
# CPU only), then each libFuzzer harness for METRALE_FUZZ_SECONDS seconds (default 45;
# scripts/fuzz.sh). Exits non-zero on any failure. This is what .ci/run runs.
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/deps.sh
if [[ -d "$HOME/.cargo/bin" ]]; then export PATH="$HOME/.cargo/bin:$PATH"; fi
if [[ -d /usr/local/cuda/bin ]]; then export PATH="$PATH:/usr/local/cuda/bin"; fi

jobs=$(nproc)
cmake --preset ci
cmake --build --preset ci --parallel "$jobs"
ctest --preset ci --parallel "$jobs"
# The Python package, built from the same project, and its pytest suite.
scripts/test_python.sh

# Sanitizers: every CPU-side test again, built with -fsanitize=address,undefined (abi.rust and
# install.consumer load the instrumented library into uninstrumented programs: excluded there).
cmake --preset asan
cmake --build --preset asan --parallel "$jobs"
ctest --preset asan --parallel "$jobs"

# Fuzzing: a short run of each harness over its committed corpus (tests/fuzz/corpus).
scripts/fuzz.sh "${METRALE_FUZZ_SECONDS:-45}"
