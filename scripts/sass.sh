#!/usr/bin/env bash
# The SASS of a source file's kernels, on the CPU machine: no GPU, no ncu. The toolkit here has no
# cuobjdump, so NVIDIA's PyPI packages nvidia-cuda-cuobjdump and nvidia-cuda-nvdisasm (which
# cuobjdump runs) are fetched once into .sass-tools/ (ignored by git). The file is compiled as the
# build compiles it (its command in BUILD/compile_commands.json, default the checkout's build/ci)
# into OUTDIR/kernels.cubin for sm_90a, dumped whole to OUTDIR/kernels.sass, and each kernel whose
# mangled name contains PATTERN is written to OUTDIR/<kernel>.sass, one "address instruction" line
# each, with its instruction count printed. What a change does to a kernel's instructions (a loop's
# length, a path's moves) can then be read before a device call.
#
#   scripts/sass.sh SOURCE PATTERN OUTDIR [BUILD]
#   e.g. scripts/sass.sh src/cuda/sm90/decode/decode_kernel.cu decode_kernelILi8E /tmp/sass
set -euo pipefail
if [[ $# -lt 3 ]]; then
  echo "usage: scripts/sass.sh SOURCE PATTERN OUTDIR [BUILD]" >&2
  exit 2
fi
# Paths as the caller gave them, from the caller's folder; BUILD by default the checkout's.
source_file=$(realpath "$1")
pattern=$2
out=$(mkdir -p "$3" && cd "$3" && pwd)
repo=$(cd "$(dirname "$0")/.." && pwd)
build=$(realpath "${4:-$repo/build/ci}")
tools=$repo/.sass-tools

if [[ ! -x $tools/nvidia/cu13/bin/nvdisasm ]]; then
  work=$(mktemp -d)
  trap 'rm -rf "$work"' EXIT
  pip download --quiet --no-deps nvidia-cuda-cuobjdump nvidia-cuda-nvdisasm -d "$work"
  mkdir -p "$tools"
  for wheel in "$work"/*.whl; do python3 -m zipfile -e "$wheel" "$tools"; done
  chmod +x "$tools"/nvidia/cu13/bin/*
fi
export PATH="$tools/nvidia/cu13/bin:$PATH"  # cuobjdump finds nvdisasm on PATH

# The build's command for the file, its object output replaced by a cubin.
command=$(python3 - "$build/compile_commands.json" "$source_file" "$out/kernels.cubin" <<'PY'
import json, re, shlex, sys
database, source, cubin = sys.argv[1:]
for entry in json.load(open(database)):
    if entry["file"] == source:
        args = shlex.split(entry["command"])
        i = args.index("-o")
        args[i + 1] = cubin
        args = [a for a in args if a != "-c"] + ["-cubin"]
        # One real architecture: a cubin holds one.
        args = [re.sub(r"^--generate-code=.*", "-arch=sm_90a", a) for a in args]
        print("cd " + shlex.quote(entry["directory"]) + " && " + shlex.join(args))
        break
else:
    sys.exit(f"{source} is not in {database}: configure that build first")
PY
)
bash -c "$command"

cuobjdump -sass "$out/kernels.cubin" >"$out/kernels.sass"
python3 -c '
import re, sys
out, pattern = sys.argv[1], sys.argv[2]
kernel, lines = None, []
def flush():
    if kernel and pattern in kernel:
        open(f"{out}/{kernel}.sass", "w").write("".join(lines))
        print(f"{len(lines):6d} {kernel}")
for line in sys.stdin:
    m = re.match(r"\s+Function : (\S+)", line)
    if m:
        flush()
        kernel, lines = m.group(1), []
        continue
    m = re.match(r"\s+/\*([0-9a-f]{4,})\*/\s+(.*?)\s*;", line)
    if m:
        lines.append(f"{m.group(1)} {m.group(2)}\n")
flush()
' "$out" "$pattern" <"$out/kernels.sass"
