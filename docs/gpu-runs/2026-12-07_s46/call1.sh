#!/usr/bin/env bash
# Forty-sixth session, call 1 (written; no machine was lent in the session: for the next one).
# Carry .deps. With the patches of patched.sh applied to the device's copy of the tree:
#  (a) build; the prefetch's GPU test (TiledFamily.DenseWeightPrefetchExact: every
#      CTA-synchronised tile, whole and in 3 K ranges, B = 2 and 16; the family's own plans);
#  (b) if it passed, the prefetch: the dense GEMM of every preset at M = 48, 64, 512, 1024, A off
#      against B = 4, 8 and 16 (letters X, Y, Z), 2 alternated rounds;
#  (c) the small grids by forced configuration at M = 48, 64 and 512, 2 rounds: P tile 2 whole,
#      Q tile 2 in 2 ranges, R tile 3 whole, S/T tile 3 in 2/4 ranges, W the stream family's
#      64 x 16 (the forty-second session's best at Qwen3 M = 48-64, never adopted), Y tile 3 in 4
#      ranges and Z tile 2 whole with the prefetch at B = 8 (if its test passed);
#  (d) cuBLASLt once; ncu of DeepSeek-V3 dense M = 64 as chosen, with and without the prefetch
#      (speed of light, memory workload).
# Then call1b.sh at once, on the same warm machine (stream-K, cuBLASLt's kernels by name, the
# decode family's profile, memcheck).
#   COMMIT=$(git rev-parse --short HEAD)+patches bash docs/gpu-runs/2026-12-07_s46/call1.sh
cd "$(dirname "$0")/../../.."
DEADLINE=${DEADLINE:-585}
NAME=call1 source docs/gpu-runs/2026-12-07_s46/patched.sh  # R, box, archive, rows, M, T, bench
box 100 $T --gtest_filter="TiledFamily.DenseWeightPrefetchExact" > $R/tests.log 2>&1
echo "tests at ${SECONDS}s"; grep -E "^\[  |Failure|FAIL" $R/tests.log | tail -6; archive
prefetch=1
grep -q "OK \] TiledFamily.DenseWeightPrefetchExact" $R/tests.log || prefetch=0
for round in 1 2; do
  ((prefetch)) || break
  for v in $(round_order $round A X Y Z); do
    case $v in A) b=off ;; X) b=4 ;; Y) b=8 ;; Z) b=16 ;; esac
    METRALE_CUDA_DENSE_PREFETCH=$b bench prefetch $v$round 48 64 512 1024
  done
  echo "prefetch round $round at ${SECONDS}s"
done
archive
for round in 1 2; do
  for v in $(round_order $round A P Q R S T W Y Z); do
    b=off
    case $v in
      A) k= ;; P) k=sm90-tiled:2 ;; Q) k=sm90-tiled:2:2 ;; R) k=sm90-tiled:3 ;;
      S) k=sm90-tiled:3:2 ;; T) k=sm90-tiled:3:4 ;; W) k=sm90-stream:5 ;;
      Y) k=sm90-tiled:3:4 b=8 ;; Z) k=sm90-tiled:2 b=8 ;;
    esac
    [[ $b != off ]] && ((!prefetch)) && continue
    METRALE_CUDA_KERNEL=$k METRALE_CUDA_DENSE_PREFETCH=$b bench forced $v$round 48 64 512
  done
  echo "forced round $round at ${SECONDS}s"
done
box 40 $M bench --ops dense --model all --tokens 48 64 512 1024 4096 --impls cublaslt \
  --budget-ms 15 --json $R/L.json > $R/L.log 2>&1
for dir in prefetch forced; do mkdir -p $R/$dir; cp $R/L.json $R/$dir/L.json; done
archive
((prefetch)) && python3 scripts/ab_table.py $R/prefetch --variants XYZ --labels Y | tee $R/prefetch_table.txt
python3 scripts/ab_table.py $R/forced --variants PQRSTWYZ --labels A | tee $R/forced_table.txt
ncu_dense() {  # NAME PREFETCH
  METRALE_CUDA_DENSE_PREFETCH=$2 box 30 ncu --clock-control none --section SpeedOfLight \
    --section MemoryWorkloadAnalysis --kernel-name regex:grouped_gemm --launch-count 1 \
    --launch-skip 3 $M bench --ops dense --model deepseek-v3 --tokens 64 --impls metrale \
    --budget-ms 1 > $R/ncu_$1.log 2>&1
}
ncu_dense chosen off
((prefetch)) && ncu_dense prefetch8 8
archive
cat $R/skipped.txt 2>/dev/null || true
