# Sourced by call1.sh and call1b.sh (from the repository root): the three patches applied to the
# device's copy of the tree, in order (none is on main): the forty-fifth session's
# stream_k_cursor.patch (stream-K's copying thread on a cursor); dense_prefetch.patch
# (METRALE_CUDA_DENSE_PREFETCH: the dense GEMM's weight rows asked of L2 a block of B k-tiles
# ahead of the TMA copies); whole_tiles.patch, on top of it (METRALE_CUDA_DENSE_SCHEDULE=
# tiles-on-stream-k and tile-pairs: stream-K's kernel with a worker a whole tile). Then the call's
# folder and helpers (scripts/gpu_call.sh, NAME set by the caller), the release build of the CLI
# and the GPU tests, and `bench FOLDER NAME TOKENS...`: the dense GEMM of every preset, metrale
# only, 15 ms a row, under the caller's environment.
D=docs/gpu-runs/2026-12-07_s46
git apply docs/gpu-runs/2026-12-07_s45/stream_k_cursor.patch $D/dense_prefetch.patch \
  $D/whole_tiles.patch || exit 1
source scripts/gpu_call.sh  # R, box, archive, build, rows
build metrale_cli metrale_test_cuda
M=build/release/bin/metrale
T=build/release/bin/metrale_test_cuda
bench() {
  local dir=$1 name=$2; shift 2
  mkdir -p $R/$dir
  box 40 $M bench --ops dense --model all --tokens "$@" --impls metrale --budget-ms 15 \
    --json $R/$dir/$name.json > $R/$dir/$name.log 2>&1
}
