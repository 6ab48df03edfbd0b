#!/usr/bin/env bash
# Forty-fifth session, call 2: call1.sh again on 28db6de, whose CTAs run their segments last tile
# first (call 1: a chain of waits through the grid).
#   COMMIT=$(git rev-parse --short HEAD) bash docs/gpu-runs/2026-12-07_s45/call2.sh
CALL=call2 exec bash "$(dirname "$0")/call1.sh"
