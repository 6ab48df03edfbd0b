#!/usr/bin/env bash
# Builds the release preset and runs `metrale bench` with the given arguments: our kernels against
# cuBLASLt (and CUTLASS, when it was built and METRALE_CUTLASS_GEMM=1) on a GPU; the CPU backend
# on a reduced default, labelled as such, without one. Also builds the shared library
# (build/release/lib/libmetrale.so) beside the CLI (build/release/bin/metrale).
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/deps.sh
if [[ -d "$HOME/.cargo/bin" ]]; then export PATH="$HOME/.cargo/bin:$PATH"; fi
if [[ -d /usr/local/cuda/bin ]]; then export PATH="$PATH:/usr/local/cuda/bin"; fi

cmake --preset release
cmake --build --preset release --parallel "$(nproc)" --target metrale_cli metrale
exec build/release/bin/metrale bench "$@"
