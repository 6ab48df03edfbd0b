#!/usr/bin/env bash
# Forty-sixth session, written for the next one (NOT RUN): issue 9's launch target at T >= 8.
# The layer at T = 8 takes 6 launches (routing, each GEMM's decode-family plan kernel and main
# kernel, the combine), 4 at T = 1, where both GEMMs run on the stream family, which plans inside
# its kernel (kStreamMaxNvfp4DeviceRows = 4: a bound of T rows an expert). Here the whole layer
# with every grouped call forced onto the stream family (METRALE_CUDA_KERNEL=sm90-stream, S)
# against main's choice (A), every preset at T = 2-32 (the stream family refuses past 32 rows an
# expert, and says so), 2 alternated rounds: the layer's time, its ratio to its grouped calls and
# its launches. If S meets 4 launches at a cost the ratio target still allows (1.15x), a
# bound by measurement in family.hpp. On main's tree (no patch); after call1.sh on the same
# machine the build is already there. Carry .deps:
#   COMMIT=$(git rev-parse --short HEAD) bash docs/gpu-runs/2026-12-07_s46/call2.sh
cd "$(dirname "$0")/../../.."
DEADLINE=${DEADLINE:-400}
NAME=call2 source scripts/gpu_call.sh  # R, box, archive, build, rows
build metrale_cli
M=build/release/bin/metrale
for round in 1 2; do
  for v in $(round_order $round A S); do
    k=; [[ $v == S ]] && k=sm90-stream
    METRALE_CUDA_KERNEL=$k box 90 $M bench --ops moe --model all --tokens 2 4 8 16 32 \
      --budget-ms 20 --json $R/$v$round.json > $R/$v$round.log 2>&1
  done
  echo "round $round at ${SECONDS}s"; archive
done
python3 - $R <<'PY' | tee $R/layer_table.txt
import glob, json, os, sys
best = {}
for path in glob.glob(os.path.join(sys.argv[1], "*.json")):
    variant = os.path.basename(path)[0]
    for r in json.load(open(path))["rows"]:
        m = r.get("moe") or {}
        if r.get("status") != "ok" or "layer_over_grouped" not in m:
            continue
        key = (variant, r["model"][:12], r["tokens"])
        n = m.get("launches") or {}
        if key not in best or r["median_us"] < best[key][0]:
            best[key] = (r["median_us"], m["layer_over_grouped"], n.get("kernels", 0) + n.get("memsets", 0))
print(f"{'model':12s} {'T':>3s} {'A us':>8s} {'ratio':>6s} {'n':>3s} {'S us':>8s} {'ratio':>6s} {'n':>3s} {'S/A':>6s}")
for (v, model, t) in sorted(k for k in best if k[0] == "A"):
    a = best[("A", model, t)]
    s = best.get(("S", model, t))
    cells = f"{s[0]:8.1f} {s[1]:6.3f} {s[2]:3d} {s[0] / a[0]:6.3f}" if s else "       -      -   -      -"
    print(f"{model:12s} {t:3d} {a[0]:8.1f} {a[1]:6.3f} {a[2]:3d} {cells}")
PY
archive
cat $R/skipped.txt 2>/dev/null || true
