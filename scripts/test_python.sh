#!/usr/bin/env bash
# Builds the Python package from this CMake project and runs its pytest suite (tests/python).
#
#   scripts/test_python.sh          a virtual environment in build/venv, its packages from PyPI,
#                                   the package built CPU-only (the CUDA code is compiled by the
#                                   ci build; on a machine without a GPU the GPU tests skip)
#   METRALE_PY_SYSTEM=1 scripts/test_python.sh
#                                   the python3 on PATH as it is, offline: nothing is downloaded
#                                   (its torch, numpy, ml-dtypes, safetensors, pytest, nanobind
#                                   and scikit-build-core are used), the CUDA backend built when
#                                   nvcc is found: the GPU machine's run (docs/testing.md)
#
# Extra arguments go to pytest. pytest's "no tests collected" (exit 5) is a failure here.
set -euo pipefail
cd "$(dirname "$0")/.."
export PYTHONDONTWRITEBYTECODE=1  # no __pycache__ in the tree

if [[ ${METRALE_PY_SYSTEM:-0} == 1 ]]; then
  python=python3
  pip_args=(--no-build-isolation --no-deps)
  # An externally managed interpreter (PEP 668) refuses installs without this flag.
  if python3 -m pip install --help 2>/dev/null | grep -q -- --break-system-packages; then
    pip_args+=(--break-system-packages)
  fi
  build_args=()
else
  if [[ ! -x build/venv/bin/python ]]; then
    python3 -m venv build/venv
  fi
  python=build/venv/bin/python
  "$python" -m pip install --quiet --disable-pip-version-check \
    numpy ml-dtypes safetensors pytest nanobind scikit-build-core
  pip_args=(--no-build-isolation --no-deps)
  build_args=(-C cmake.define.METRALE_CUDA=OFF -C "build-dir=build/pip-cpu/{wheel_tag}")
fi

echo "test_python: building and installing the package with $("$python" --version)"
"$python" -m pip install --quiet --disable-pip-version-check "${pip_args[@]}" \
  "${build_args[@]}" .
"$python" -c 'import metrale; print("metrale", metrale.__version__, metrale.backends())'

rc=0
"$python" -m pytest -p no:cacheprovider -ra tests/python "$@" || rc=$?
if [[ $rc -eq 5 ]]; then
  echo "test_python: pytest collected no tests: failing" >&2
  exit 1
fi
exit "$rc"
