# Sourced by a device call's script (docs/gpu-runs/*/call*.sh), from the repository root, with
# NAME set: the call's results folder R=/tmp/NAME, the time box (gpu_timebox.sh: DEADLINE, left,
# box), gpu_build.sh's setup (the carried packages unpacked, nvcc on PATH, release_build, and
# round_order: an A/B round's order), the GPU's name and clocks in R/nvidia-smi.txt, and
#   archive               R as $OUT/NAME.tgz (a call brings back only a few files);
#   build TARGET...       the release build (gpu_build.sh) of the targets, logged to R/build.log;
#                         the bench's JSONs name COMMIT (the device copy's git metadata may be
#                         another commit's);
#   rows JSON...          one line per row of bench JSONs: file, implementation, model, tokens,
#                         median, the kernel's label.
#   NAME=call3 source scripts/gpu_call.sh
CALL=${NAME:?name the call}
R=/tmp/$CALL
mkdir -p "$R"
source scripts/gpu_timebox.sh
source scripts/gpu_build.sh
archive() {
  tar -czf "$OUT/$CALL.tgz" -C /tmp "$CALL"
  echo "archived at ${SECONDS}s"
}
build() {
  export METRALE_COMMIT=${COMMIT:?name the commit the tree holds}
  release_build "$R/build.log" --target "$@"
  echo "built at ${SECONDS}s: $(tail -1 "$R/build.log")"
}
rows() {
  python3 - "$@" <<'PY'
import json, sys
for f in sys.argv[1:]:
    try:
        rows = json.load(open(f))["rows"]
    except Exception:
        continue
    for r in rows:
        if r.get("status") == "ok":
            print(f"{f.split('/')[-1][:-5]:9s} {r['impl'][:8]:8s} {r['model'][:14]:14s} "
                  f"{r['tokens']:5d} {r['median_us']:9.2f} {r.get('kernel', '')}")
PY
}
nvidia-smi --query-gpu=name,clocks.max.sm,clocks.max.mem,memory.total --format=csv \
  >"$R/nvidia-smi.txt" 2>&1
cat "$R/nvidia-smi.txt"
