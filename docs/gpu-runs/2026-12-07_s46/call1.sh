#!/usr/bin/env bash
# Forty-sixth session, call 1 (written; no machine was lent in the session: for the next one).
# Carry .deps. Applies three patches to the device's copy of the tree (none is on main), in order:
#   stream_k_cursor.patch (forty-fifth session): stream-K's copying thread on a cursor;
#   dense_prefetch.patch (this session): METRALE_CUDA_DENSE_PREFETCH, the dense GEMM's weight
#     rows asked of L2 a block of B k-tiles ahead of the TMA copies (opt-in);
#   whole_tiles.patch (this session, on top of the prefetch's): METRALE_CUDA_DENSE_SCHEDULE=
#     tiles-on-stream-k and tile-pairs, stream-K's kernel with a worker a whole tile.
#  (a) build; the GPU tests (stream-K forced on every tile, CTAs and pairs; the prefetch
#      on every CTA-synchronised tile, whole and in 3 K ranges, B = 2 and 16; the whole-tile
#      workers as two more schedules of stream-K's test); no A/B of a patch
#      whose test did not pass;
#  (b) the prefetch: the dense GEMM of every preset at M = 48, 64, 512, 1024, A off against
#      B = 4, 8 and 16 (letters X, Y, Z), 3 alternated rounds;
#  (c) stream-K on the cursor (A the tile grid, B stream-K on the family's tile, C on tile 3
#      forced, F pairs on the family's tile) and its kernel a whole tile a worker (I
#      tiles-on-stream-k, J tile-pairs), 2 rounds: I/A is the kernel's own cost, B/I stream-K's
#      schedule's, J/I the pairs' (the forty-fifth session's D, E, G, H left out for time);
#  (d) the small grids by forced configuration at M = 48, 64 and 512, 2 rounds: P tile 2 whole,
#      Q tile 2 in 2 ranges, R tile 3 whole, S/T tile 3 in 2/4 ranges, W the stream family's
#      64 x 16 (the forty-second session's best at Qwen3 M = 48-64, never adopted), Y tile 3 in 4
#      ranges and Z tile 2 whole with the prefetch at B = 8;
#  (e) cuBLASLt once; ncu: DeepSeek-V3 dense M = 64 as chosen with and without the prefetch
#      (speed of light, memory workload), cuBLASLt's kernels by name at Qwen3-30B M = 64 and 512,
#      the decode family at DeepSeek-V3 gate_up T = 64 on this card (the H200 profile owed since
#      the thirty-eighth session);
#  (f) compute-sanitizer memcheck over the patches' tests.
#   COMMIT=$(git rev-parse --short HEAD)+patches bash docs/gpu-runs/2026-12-07_s46/call1.sh
cd "$(dirname "$0")/../../.."
D=docs/gpu-runs/2026-12-07_s46
git apply docs/gpu-runs/2026-12-07_s45/stream_k_cursor.patch || exit 1
git apply $D/dense_prefetch.patch || exit 1
git apply $D/whole_tiles.patch || exit 1
DEADLINE=${DEADLINE:-585}
NAME=call1 source scripts/gpu_call.sh  # R, box, archive, build, rows
mkdir -p $R/prefetch $R/ab $R/forced
build metrale_cli metrale_test_cuda
M=build/release/bin/metrale
T=build/release/bin/metrale_test_cuda
box 150 $T --gtest_filter="TiledFamily.DenseWeightPrefetchExact:TiledFamily.DenseStreamKExactAndRealistic:Schedules/GraphStreamK.*" \
  > $R/tests.log 2>&1
echo "tests at ${SECONDS}s"; grep -E "^\[  |Failure|FAIL" $R/tests.log | tail -12; archive
passed() { grep -q "OK \] TiledFamily.$1" $R/tests.log; }
bench() {  # FOLDER NAME TOKENS... (environment set by the caller)
  local dir=$1 name=$2; shift 2
  box 40 $M bench --ops dense --model all --tokens "$@" --impls metrale --budget-ms 15 \
    --json $R/$dir/$name.json > $R/$dir/$name.log 2>&1
}
for round in 1 2 3; do
  passed DenseWeightPrefetchExact || break
  order="A X Y Z"; ((round % 2 == 0)) && order="Z Y X A"
  for v in $order; do
    case $v in A) b=off ;; X) b=4 ;; Y) b=8 ;; Z) b=16 ;; esac
    METRALE_CUDA_DENSE_PREFETCH=$b bench prefetch $v$round 48 64 512 1024
  done
  echo "prefetch round $round at ${SECONDS}s"
done
archive
for round in 1 2; do
  passed DenseStreamKExactAndRealistic || break
  order="A B C F I J"; ((round % 2 == 0)) && order="J I F C B A"
  for v in $order; do
    case $v in
      A) s=tiles k= ;; B) s=stream-k k= ;; C) s=stream-k k=sm90-tiled:3 ;;
      F) s=stream-k-pairs k= ;; I) s=tiles-on-stream-k k= ;; J) s=tile-pairs k= ;;
    esac
    METRALE_CUDA_DENSE_SCHEDULE=$s METRALE_CUDA_KERNEL=$k bench ab $v$round 48 64 512 1024 4096
  done
  echo "stream-K round $round at ${SECONDS}s"
done
archive
for round in 1 2; do
  order="A P Q R S T W Y Z"; ((round % 2 == 0)) && order="Z Y W T S R Q P A"
  for v in $order; do
    b=off
    case $v in
      A) k= ;; P) k=sm90-tiled:2 ;; Q) k=sm90-tiled:2:2 ;; R) k=sm90-tiled:3 ;;
      S) k=sm90-tiled:3:2 ;; T) k=sm90-tiled:3:4 ;; W) k=sm90-stream:5 ;; Y) k=sm90-tiled:3:4 b=8 ;;
      Z) k=sm90-tiled:2 b=8 ;;
    esac
    METRALE_CUDA_KERNEL=$k METRALE_CUDA_DENSE_PREFETCH=$b bench forced $v$round 48 64 512
  done
  echo "forced round $round at ${SECONDS}s"
done
box 40 $M bench --ops dense --model all --tokens 48 64 512 1024 4096 --impls cublaslt \
  --budget-ms 15 --json $R/ab/L.json > $R/ab/L.log 2>&1
cp $R/ab/L.json $R/prefetch/L.json; cp $R/ab/L.json $R/forced/L.json
archive
python3 scripts/ab_table.py $R/prefetch --variants XYZ --labels Y | tee $R/prefetch_table.txt
python3 scripts/ab_table.py $R/ab --variants BCFIJ --labels BIJ | tee $R/ab_table.txt
python3 scripts/ab_table.py $R/forced --variants PQRSTWYZ --labels A | tee $R/forced_table.txt
ncu_dense() {  # NAME PREFETCH
  METRALE_CUDA_DENSE_PREFETCH=$2 box 30 ncu --clock-control none --section SpeedOfLight \
    --section MemoryWorkloadAnalysis --kernel-name regex:grouped_gemm --launch-count 1 \
    --launch-skip 3 $M bench --ops dense --model deepseek-v3 --tokens 64 --impls metrale \
    --budget-ms 1 > $R/ncu_$1.log 2>&1
}
ncu_dense chosen off
ncu_dense prefetch8 8
for t in 64 512; do
  box 25 ncu --clock-control none --metrics gpu__time_duration.sum --launch-count 60 \
    --kernel-name regex:'nvjet|xmma|gemm|cutlass' $M bench --ops dense --model qwen3-30b-a3b \
    --tokens $t --impls cublaslt --budget-ms 1 > $R/ncu_lt_qwen3_$t.log 2>&1
done
grep -h -E "^  [a-zA-Z_].*\(" $R/ncu_lt_*.log | sort | uniq -c | cut -c1-160
box 40 ncu --clock-control none --section SpeedOfLight --section MemoryWorkloadAnalysis \
  --kernel-name regex:decode_kernel --launch-count 1 --launch-skip 3 $M bench --ops gate_up \
  --model deepseek-v3 --tokens 64 --impls metrale --budget-ms 2 > $R/ncu_decode_T64.log 2>&1
archive
box 100 compute-sanitizer --tool memcheck --print-limit 5 $T \
  --gtest_filter="TiledFamily.DenseWeightPrefetchExact:TiledFamily.DenseStreamKExactAndRealistic" \
  > $R/memcheck.log 2>&1
tail -3 $R/memcheck.log; archive
cat $R/skipped.txt 2>/dev/null || true
