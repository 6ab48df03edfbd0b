#!/usr/bin/env bash
# Forty-second session, call 4, NOT RUN (four starts got no machine): branch tiled-zfill (the tiled
# family's bf16 loads copy absent pieces as zeros; the CTA-synchronised kernel stops zeroing its
# stages) against main 76f1a80 on the dense rows its tiles run, then the GPU tests in
# tiled-zfill's tree (which holds main's merged 2f4c16a too: call 3's time box left part of them
# unrun). Packs (carry .deps and .variants):
#   git checkout -b tiled-zfill && git am docs/gpu-runs/2026-12-07_s42/0001-*.patch && git checkout -
#   scripts/gpu_variants.sh pack main tiled-zfill
#   DEADLINE=335 bash docs/gpu-runs/2026-12-07_s42/call4.sh
cd "$(dirname "$0")/../../.."
R=/tmp/r42d; mkdir -p $R
source scripts/gpu_timebox.sh
archive() { cp /tmp/variants/*.json $R/ 2>/dev/null; tar -czf $OUT/call4.tgz -C /tmp r42d; echo "archived at ${SECONDS}s"; }
nvidia-smi --query-gpu=name,clocks.max.sm,clocks.max.mem --format=csv,noheader
ROUNDS=2 box 215 scripts/gpu_variants.sh run $R/dense --model all --tokens 48,64,512 \
  --ops dense --budget-ms 20 > $R/dense.log 2>&1
echo "dense done at ${SECONDS}s"; tail -19 $R/dense.log
archive
box $(( $(left) - 20 )) scripts/gpu_variants.sh test $R "ExactSweep.Bf16Gemm:RealisticSweep.Bf16Gemm:\
TiledFamily.EveryTileDenseExact:TiledFamily.Bf16KSplitsExactAndRealistic:TiledFamily.EveryTileWidthExact:\
Consistency.*:GraphSmall.*"
echo "tests done at ${SECONDS}s"; grep -E "PASSED|FAILED|tests ran|Failure" $R/tests.log | tail -12
archive
cat $R/skipped.txt 2>/dev/null || true
