#!/usr/bin/env bash
# Run on the CPU machine before a GPU session: puts what the GPU machine lacks and cannot fetch
# (it has no internet) into ignored folders that a device call carries along.
#   .deps/     the Debian dev packages the build needs and the GPU image does not have (fmt,
#              CLI11, nlohmann-json, GoogleTest), as .deb files; gpu_build.sh and gpu_run.sh
#              unpack them there with `dpkg -x`, and scripts/deps.sh installs from them offline
#   .cutlass/  CUTLASS's headers (scripts/fetch_cutlass.sh), for the reference arms
# Then pass `carry: [".deps", ".cutlass"]` to the device calls. Skips what is already there.
#
#   scripts/gpu_prepare.sh
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(libfmt-dev libfmt9 libcli11-dev nlohmann-json3-dev libgtest-dev googletest)
mkdir -p .deps
for package in "${packages[@]}"; do
  if compgen -G ".deps/${package}_*.deb" >/dev/null; then continue; fi
  # apt-get download writes into the current folder.
  (cd .deps && apt-get download -qq "$package")
done
echo "gpu_prepare: .deps holds $(ls .deps/*.deb | wc -l) packages"

if [[ -d .cutlass/include ]]; then
  echo "gpu_prepare: .cutlass present"
else
  scripts/fetch_cutlass.sh
fi
