# Sourced by a device call's script (docs/gpu-runs/*/call*.sh): steps time-boxed so that the call
# ends, its archive written, inside its limit. DEADLINE (seconds from the script's start, default
# 560) is the call's end; `box SECONDS COMMAND...` runs a step for at most SECONDS, fewer where the
# deadline is nearer (15 s kept for the archive), and skips it, noting so in $R/skipped.txt, where
# less than 5 s are left. `left` prints the seconds to the deadline.
DEADLINE=${DEADLINE:-560}
left() { echo $((DEADLINE - SECONDS)); }
box() {
  local want=$1 l
  shift
  l=$(($(left) - 15))
  ((l < want)) && want=$l
  if ((want < 5)); then
    echo "skipped: $*" >>"$R/skipped.txt"
    return 1
  fi
  timeout "$want" "$@"
}
