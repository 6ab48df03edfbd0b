#!/usr/bin/env bash
# Superseded by docs/gpu-runs/2026-12-07_s46/call1.sh and call1b.sh (the same cursor patch,
# fewer stream-K variants, with the forty-sixth session's patches and forced small grids beside it).
# Written in the forty-fifth session for the next one, NOT RUN: stream-K's copying thread on a
# cursor (stream_k_cursor.patch: built and compiled clean, never run on a GPU, the session's
# device time having run out), its GPU tests, then call 3's A/B (call3.sh: the tile grid against
# stream-K on the family's tile and tiles 3, 6 and 7 forced, and its pairs, on every preset's
# dense GEMM at M = 48-4096, 3 alternated rounds; cuBLASLt; memcheck). The patch goes onto the
# device's copy of the tree only: land it if the tests pass and the rows say so. Then cuBLASLt's
# dense kernels by name at M = 64 and 512 (Qwen3-30B, Qwen3-Next): ncu on GEMM kernels only
# (the bench's weight fills and streams left out), 60 launches, so that the dense GEMM's come after
# the 8192^3 ceiling's (`nvjet_sm90_tst_320x128_64x3_1x2_h_bz_coopB_TNT`, grid 2 x 66). Carry .deps:
#   COMMIT=$(git rev-parse --short HEAD) bash docs/gpu-runs/2026-12-07_s45/next_call.sh
cd "$(dirname "$0")/../../.."
git apply docs/gpu-runs/2026-12-07_s45/stream_k_cursor.patch || exit 1
DEADLINE=470 bash docs/gpu-runs/2026-12-07_s45/call3.sh
R=/tmp/call3
for m in qwen3-30b-a3b qwen3-next-80b-a3b; do
  for t in 64 512; do
    timeout 25 ncu --clock-control none --metrics gpu__time_duration.sum --launch-count 60 \
      --kernel-name regex:'nvjet|xmma|gemm|cutlass' build/release/bin/metrale bench --ops dense \
      --model $m --tokens $t --impls cublaslt --budget-ms 1 > $R/ncu_${m}_$t.log 2>&1
  done
done
tar -czf "$OUT/call3.tgz" -C /tmp call3
grep -h -E "^  [a-zA-Z_].*\(" $R/ncu_*.log | sort | uniq -c | cut -c1-200
