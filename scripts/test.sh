#!/usr/bin/env bash
# Builds metrale with the ci preset (RelWithDebInfo, warnings as errors, the CUDA code compiled
# when nvcc is present, CUTLASS off) on all cores and runs every test. GPU tests skip, visibly,
# on a machine without a GPU. Then the Python package and its pytest suite (scripts/test_python.sh).
# Exits non-zero on any failure. This is what .ci/run runs.
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
