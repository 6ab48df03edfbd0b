#!/usr/bin/env bash
# Forty-fifth session, call 3 (written, never run as such: next_call.sh runs it on the cursor
# patch): call1.sh on the copying thread's cursor (call 2: the 64-bit divisions a stage in
# thread 0 held back its warpgroup), 3 rounds, and H: stream-K pairs on tile 3.
#   COMMIT=$(git rev-parse --short HEAD) bash docs/gpu-runs/2026-12-07_s45/call3.sh
CALL=call3 ROUNDS=3 VARIANTS="A B C D E F G H" exec bash "$(dirname "$0")/call1.sh"
