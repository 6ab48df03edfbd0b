#!/usr/bin/env bash
# Forty-sixth session, call 1 (carry .deps):
#  (a) the forty-fifth session's stream_k_cursor.patch applied to the device's copy, built, its
#      GPU tests; then call 3's A/B (the tile grid against stream-K on the family's tile, tiles
#      3, 6 and 7 forced, and pairs on the family's tile, 6 and 3; 3 alternated rounds);
#  (b) the dense GEMM's small grids by forced configuration, 2 alternated rounds at M = 48, 64
#      and 512 (every preset): A the family's choice, P tile 2 whole, Q tile 2 in 2 ranges, R
#      tile 3 whole, S/T/U tile 3 in 2/4/8 ranges, V tile 6 in 2 ranges, W the stream family;
#  (c) cuBLASLt once; ncu: DeepSeek-V3 M = 64 as chosen and on tile 3 in 4 ranges (speed of
#      light, memory workload), cuBLASLt's kernels by name at M = 64 and 512;
#  (d) the dense TMA and K-split tests, compute-sanitizer over stream-K's test.
#   COMMIT=$(git rev-parse --short HEAD)+cursor bash docs/gpu-runs/2026-12-07_s46/call1.sh
cd "$(dirname "$0")/../../.."
git apply docs/gpu-runs/2026-12-07_s45/stream_k_cursor.patch || exit 1
DEADLINE=${DEADLINE:-585}
NAME=call1 source scripts/gpu_call.sh  # R, box, archive, build, rows
mkdir -p $R/ab $R/forced
build metrale_cli metrale_test_cuda
M=build/release/bin/metrale
T=build/release/bin/metrale_test_cuda
box 80 $T --gtest_filter="TiledFamily.DenseStreamKExactAndRealistic:Schedules/GraphStreamK.*" \
  > $R/tests.log 2>&1
echo "tests at ${SECONDS}s"; grep -E "^\[  |Failure|FAIL" $R/tests.log | tail -12; archive
bench() {  # FOLDER NAME TOKENS... (environment set by the caller)
  local dir=$1 name=$2; shift 2
  box 40 $M bench --ops dense --model all --tokens "$@" --impls metrale --budget-ms 15 \
    --json $R/$dir/$name.json > $R/$dir/$name.log 2>&1
}
streamk=1
grep -q "OK \] TiledFamily.DenseStreamKExactAndRealistic" $R/tests.log || streamk=0
for round in 1 2 3; do
  ((streamk)) || break
  order="A B C D E F G H"; ((round % 2 == 0)) && order="H G F E D C B A"
  for v in $order; do
    case $v in
      A) s=tiles k= ;; B) s=stream-k k= ;; C) s=stream-k k=sm90-tiled:3 ;;
      D) s=stream-k k=sm90-tiled:6 ;; E) s=stream-k k=sm90-tiled:7 ;; F) s=stream-k-pairs k= ;;
      G) s=stream-k-pairs k=sm90-tiled:6 ;; H) s=stream-k-pairs k=sm90-tiled:3 ;;
    esac
    METRALE_CUDA_DENSE_SCHEDULE=$s METRALE_CUDA_KERNEL=$k bench ab $v$round 48 64 512 1024 4096
  done
  echo "stream-K round $round at ${SECONDS}s"
done
archive
for round in 1 2; do
  order="A P Q R S T U V W"; ((round % 2 == 0)) && order="W V U T S R Q P A"
  for v in $order; do
    case $v in
      A) k= ;; P) k=sm90-tiled:2 ;; Q) k=sm90-tiled:2:2 ;; R) k=sm90-tiled:3 ;;
      S) k=sm90-tiled:3:2 ;; T) k=sm90-tiled:3:4 ;; U) k=sm90-tiled:3:8 ;; V) k=sm90-tiled:6:2 ;;
      W) k=sm90-stream ;;
    esac
    METRALE_CUDA_DENSE_SCHEDULE=tiles METRALE_CUDA_KERNEL=$k bench forced $v$round 48 64 512
  done
  echo "forced round $round at ${SECONDS}s"
done
box 40 $M bench --ops dense --model all --tokens 48 64 512 1024 4096 --impls cublaslt \
  --budget-ms 15 --json $R/ab/L.json > $R/ab/L.log 2>&1
cp $R/ab/L.json $R/forced/L.json
archive
((streamk)) && python3 scripts/ab_table.py $R/ab --variants BCDEFGH --labels BF | tee $R/ab_table.txt
python3 scripts/ab_table.py $R/forced --variants PQRSTUVW --labels A | tee $R/forced_table.txt
ncu_dense() {  # NAME KERNEL-REGEX IMPL [FORCED]
  METRALE_CUDA_KERNEL=$4 box 30 ncu --clock-control none --section SpeedOfLight \
    --section MemoryWorkloadAnalysis --kernel-name regex:"$2" --launch-count 1 --launch-skip 3 \
    $M bench --ops dense --model deepseek-v3 --tokens 64 --impls $3 --budget-ms 1 \
    > $R/ncu_$1.log 2>&1
}
ncu_dense chosen grouped_gemm metrale
ncu_dense tile3x4 grouped_gemm metrale sm90-tiled:3:4
for m in qwen3-30b-a3b qwen3-next-80b-a3b; do
  for t in 64 512; do
    box 25 ncu --clock-control none --metrics gpu__time_duration.sum --launch-count 60 \
      --kernel-name regex:'nvjet|xmma|gemm|cutlass' $M bench --ops dense --model $m --tokens $t \
      --impls cublaslt --budget-ms 1 > $R/ncu_lt_${m}_$t.log 2>&1
  done
done
grep -h -E "^  [a-zA-Z_].*\(" $R/ncu_lt_*.log | sort | uniq -c | cut -c1-160
archive
box 60 $T --gtest_filter="TiledFamily.DenseCopiesByTmaAndCpAsyncExact:TiledFamily.Bf16KSplits*" \
  > $R/tests2.log 2>&1
grep -E "^\[  |Failure" $R/tests2.log | tail -4
box 100 compute-sanitizer --tool memcheck --print-limit 5 $T \
  --gtest_filter=TiledFamily.DenseStreamKExactAndRealistic > $R/memcheck.log 2>&1
tail -3 $R/memcheck.log; archive
cat $R/skipped.txt 2>/dev/null || true
