#!/usr/bin/env bash
# Forty-sixth session, call 1b (written, not run): right after call1.sh, on the same warm machine
# (its build is there: only the patched files compile again). Carry .deps.
#  (a) stream-K's GPU tests on the cursor, with the whole-tile workers as two more schedules
#      (TiledFamily.DenseStreamKExactAndRealistic, Schedules/GraphStreamK.*);
#  (b) if they passed, the A/B: A the tile grid, B stream-K on the family's tile, C on tile 3
#      forced, F pairs on the family's tile, I tiles-on-stream-k, J tile-pairs, at M = 48-4096,
#      2 alternated rounds: I/A is the kernel's own cost, B/I stream-K's schedule's, J/I the
#      pairs' (the forty-fifth session's D, E, G, H left out);
#  (c) the dense GEMM at M = 1 and 8 (gpt-oss 0.88-0.89x cuBLASLt on the stream family; the
#      16-token tile forced was 0.93x the stream family's time at gpt-oss M = 1 on an H100, the
#      forty-second session): A the family's choice, U tile 1 whole, V tile 1 in 2 ranges;
#  (d) cuBLASLt's dense kernels by name at Qwen3-30B M = 64 and 512 (ncu on GEMM kernels only);
#      the decode family at DeepSeek-V3 gate_up T = 64 on this card (speed of light, memory
#      workload: the H200 profile owed since the thirty-eighth session);
#  (e) compute-sanitizer memcheck over the patches' tests.
#   COMMIT=$(git rev-parse --short HEAD)+patches bash docs/gpu-runs/2026-12-07_s46/call1b.sh
cd "$(dirname "$0")/../../.."
DEADLINE=${DEADLINE:-585}
NAME=call1b source docs/gpu-runs/2026-12-07_s46/patched.sh  # R, box, archive, rows, M, T, bench
box 150 $T --gtest_filter="TiledFamily.DenseStreamKExactAndRealistic:Schedules/GraphStreamK.*" \
  > $R/tests.log 2>&1
echo "tests at ${SECONDS}s"; grep -E "^\[  |Failure|FAIL" $R/tests.log | tail -6; archive
for round in 1 2; do
  grep -q "OK \] TiledFamily.DenseStreamKExactAndRealistic" $R/tests.log || break
  for v in $(round_order $round A B C F I J); do
    case $v in
      A) s=tiles k= ;; B) s=stream-k k= ;; C) s=stream-k k=sm90-tiled:3 ;;
      F) s=stream-k-pairs k= ;; I) s=tiles-on-stream-k k= ;; J) s=tile-pairs k= ;;
    esac
    METRALE_CUDA_DENSE_SCHEDULE=$s METRALE_CUDA_KERNEL=$k bench ab $v$round 48 64 512 1024 4096
  done
  echo "stream-K round $round at ${SECONDS}s"
done
box 40 $M bench --ops dense --model all --tokens 48 64 512 1024 4096 --impls cublaslt \
  --budget-ms 15 --json $R/ab/L.json > $R/ab/L.log 2>&1
archive
[[ -f $R/ab/A1.json ]] && python3 scripts/ab_table.py $R/ab --variants BCFIJ --labels BIJ | tee $R/ab_table.txt
for round in 1 2; do
  for v in $(round_order $round A U V); do
    case $v in A) k= ;; U) k=sm90-tiled:1 ;; V) k=sm90-tiled:1:2 ;; esac
    METRALE_CUDA_KERNEL=$k bench small $v$round 1 8
  done
done
box 20 $M bench --ops dense --model all --tokens 1 8 --impls cublaslt --budget-ms 15 \
  --json $R/small/L.json > $R/small/L.log 2>&1
python3 scripts/ab_table.py $R/small --variants UV --labels A | tee $R/small_table.txt
archive
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
