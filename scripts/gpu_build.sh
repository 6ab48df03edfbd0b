# Sourced by the GPU scripts (gpu_iterate.sh, gpu_ab.sh, gpu_variants.sh, gpu_call.sh): the
# carried Debian packages unpacked, nvcc on PATH, release_build LOG [BUILD_ARGS...], which
# configures build/release for sm_90a without CUTLASS and builds it (BUILD_ARGS go to
# `cmake --build`), logging to LOG (its status is the build's), and round_order, the A/B scripts'
# order of a round.
# A GPU machine's copy of the tree may carry another commit's git metadata: set METRALE_COMMIT
# (e.g. `METRALE_COMMIT=<hash> scripts/gpu_ab.sh ...`) so that the bench's JSON names the commit
# that was built.
for deb in .deps/*.deb; do [[ -e $deb ]] && dpkg -x "$deb" /; done
export PATH="$PATH:/usr/local/cuda/bin"

# round_order ROUND NAME...: the names (words without spaces) in the order an A/B's round ROUND
# runs them: as given in odd rounds, reversed in even ones, so that none always runs first.
round_order() {
  local round=$1 i
  shift
  if ((round % 2 == 1)); then
    echo "$@"
    return
  fi
  for ((i = $#; i >= 1; --i)); do printf '%s ' "${!i}"; done
  echo
}

release_build() {
  local log=$1
  shift
  cmake -S . -B build/release -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_CUDA_ARCHITECTURES=90a-real -DMETRALE_CUDA=ON -DMETRALE_CUTLASS=OFF >"$log" 2>&1
  cmake --build build/release --parallel "$(nproc)" "$@" >>"$log" 2>&1
}
