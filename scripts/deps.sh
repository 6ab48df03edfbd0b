#!/usr/bin/env bash
# Installs what metrale builds and tests with, and only what is missing (idempotent: on a machine
# that has everything it installs nothing and touches no package list). Debian/Ubuntu, apt-get.
# A .deb of a missing package found in .deps/ is installed from there (offline machines); the
# rest comes from the configured apt sources. The CUDA toolkit is not installed here: without
# nvcc, configure the cpu-only preset.
set -euo pipefail
cd "$(dirname "$0")/.."

# package -> how to tell it is present (a command on PATH, or the dpkg package itself)
declare -A probe=(
  [cmake]="cmd:cmake"
  [ninja-build]="cmd:ninja"
  [g++]="cmd:g++"
  [libgtest-dev]="pkg:libgtest-dev"
  [libfmt-dev]="pkg:libfmt-dev"
  [libcli11-dev]="pkg:libcli11-dev"
  [nlohmann-json3-dev]="pkg:nlohmann-json3-dev"
  [cargo]="cmd:cargo"
  [python3-venv]="pkg:python3-venv"
  [python3-dev]="pkg:python3-dev"
  [pkg-config]="cmd:pkg-config"
  [clang]="cmd:clang"
  [libclang-rt-dev]="pkg:libclang-rt-dev"
)

present() {
  local kind=${1%%:*} name=${1#*:}
  if [[ $kind == cmd ]]; then
    command -v "$name" >/dev/null 2>&1 || [[ $name == cargo && -x "$HOME/.cargo/bin/cargo" ]]
  else
    [[ "$(dpkg-query -W -f='${Status}' "$name" 2>/dev/null)" == "install ok installed" ]]
  fi
}

missing=()
# METRALE_DEPS_ASSUME_MISSING="pkg ..." treats those as missing (to exercise the install path).
for package in ${METRALE_DEPS_ASSUME_MISSING:-}; do missing+=("$package"); done
# clang and libclang-rt-dev (libFuzzer, the sanitizer runtimes): scripts/fuzz.sh; python3-venv
# and python3-dev: the Python package (scripts/test_python.sh).
for package in cmake ninja-build g++ libgtest-dev libfmt-dev libcli11-dev nlohmann-json3-dev cargo \
               pkg-config clang libclang-rt-dev python3-venv python3-dev; do
  [[ " ${missing[*]} " == *" $package "* ]] && continue
  present "${probe[$package]}" || missing+=("$package")
done

if [[ ${#missing[@]} -eq 0 ]]; then
  echo "deps: everything present"
  exit 0
fi
echo "deps: installing ${missing[*]}"

sudo_cmd=()
if [[ $(id -u) -ne 0 ]]; then sudo_cmd=(sudo); fi
# METRALE_DEPS_DRY_RUN=1 prints the apt-get commands instead of running them.
if [[ ${METRALE_DEPS_DRY_RUN:-0} == 1 ]]; then sudo_cmd=(echo "${sudo_cmd[@]}"); fi
export DEBIAN_FRONTEND=noninteractive

local_debs=()
from_repo=()
for package in "${missing[@]}"; do
  deb=$(ls .deps/"${package}"_*.deb 2>/dev/null | head -n 1 || true)
  if [[ -n $deb ]]; then local_debs+=("./$deb"); else from_repo+=("$package"); fi
done
# libfmt-dev needs its runtime library, shipped beside it in .deps/.
if [[ " ${local_debs[*]} " == *" ./.deps/libfmt-dev_"* ]]; then
  runtime=$(ls .deps/libfmt9_*.deb 2>/dev/null | head -n 1 || true)
  [[ -n $runtime ]] && local_debs+=("./$runtime")
fi
# googletest's sources come with libgtest-dev from the same place.
if [[ " ${local_debs[*]} " == *" ./.deps/libgtest-dev_"* ]]; then
  sources=$(ls .deps/googletest_*.deb 2>/dev/null | head -n 1 || true)
  [[ -n $sources ]] && local_debs+=("./$sources")
fi

if [[ ${#from_repo[@]} -gt 0 ]]; then
  "${sudo_cmd[@]}" apt-get update -qq
fi
"${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${local_debs[@]}" "${from_repo[@]}"
echo "deps: done"
