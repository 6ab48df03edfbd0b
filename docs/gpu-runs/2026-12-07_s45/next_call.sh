#!/usr/bin/env bash
# Written in the forty-fifth session for the next one, NOT RUN: stream-K's copying thread on a
# cursor (stream_k_cursor.patch: built and compiled clean, never run on a GPU, the session's
# device time having run out), its GPU tests, then call 3's A/B (call3.sh: the tile grid against
# stream-K on the family's tile and tiles 3, 6 and 7 forced, and its pairs, on every preset's
# dense GEMM at M = 48-4096, 3 alternated rounds; cuBLASLt; memcheck). The patch goes onto the
# device's copy of the tree only: land it if the tests pass and the rows say so. Carry .deps:
#   COMMIT=$(git rev-parse --short HEAD) bash docs/gpu-runs/2026-12-07_s45/next_call.sh
cd "$(dirname "$0")/../../.."
git apply docs/gpu-runs/2026-12-07_s45/stream_k_cursor.patch || exit 1
exec bash docs/gpu-runs/2026-12-07_s45/call3.sh
