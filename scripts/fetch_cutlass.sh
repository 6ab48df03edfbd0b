#!/usr/bin/env bash
# CUTLASS headers for the reference arms (`cutlass`, `bf16-grouped (CUTLASS)`), from the
# nvidia-cutlass package on PyPI, into .cutlass/ (ignored by git): include/ and
# tools/util/include/, the layout cmake/dependencies.cmake reads through CUTLASS_HOME. The GPU
# machine cannot reach PyPI, so fetch here and either carry .cutlass (scripts/gpu_run.sh builds the
# arm from it, with what time is left) or build here and carry only the binary:
#   scripts/fetch_cutlass.sh
#   CUTLASS_HOME=$PWD/.cutlass cmake -S . -B build/cutlass -G Ninja -DCMAKE_BUILD_TYPE=Release \
#     -DCMAKE_CUDA_ARCHITECTURES=90a-real -DMETRALE_CUDA=ON -DMETRALE_CUTLASS=ON
#   ninja -C build/cutlass metrale_cli   # ~6 minutes on 2 cores; carry build/cutlass/bin (23 MB)
set -euo pipefail
cd "$(dirname "$0")/.."
VERSION=${CUTLASS_VERSION:-4.2.0.0}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
pip download --quiet --no-deps "nvidia-cutlass==$VERSION" -d "$work"
unzip -q "$work"/nvidia_cutlass-*.whl 'cutlass_library/source/include/*' \
  'cutlass_library/source/tools/util/include/*' -d "$work/x"
rm -rf .cutlass && mkdir -p .cutlass/tools/util
mv "$work/x/cutlass_library/source/include" .cutlass/include
mv "$work/x/cutlass_library/source/tools/util/include" .cutlass/tools/util/include
echo "CUTLASS $VERSION headers in .cutlass ($(du -sh .cutlass | cut -f1))"
