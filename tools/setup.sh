#!/usr/bin/env bash
# Set-up in one command on a fresh Debian 12 machine: installs what is missing (Debian packages only), builds
# Orrery (Release, in ./build), then either predicts the built-in default scenario or, with --test, runs the whole
# test suite through ctest.
#   tools/setup.sh          install, build, `orrery predict`
#   tools/setup.sh --test   install, build, ctest
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$here"
mode="${1:-predict}"

# libopenmpi-dev and openmpi-bin: `orrery search --mpi` and its two-rank test. zlib1g-dev: gzip Kineto traces.
packages=(g++ cmake ninja-build python3 libboost-graph-dev nlohmann-json3-dev libcli11-dev libfmt-dev
          libeigen3-dev catch2 libopenmpi-dev openmpi-bin zlib1g-dev)
missing=()
for p in "${packages[@]}"; do
  dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  sudo_cmd=""
  if [ "$(id -u)" -ne 0 ]; then sudo_cmd="sudo"; fi
  $sudo_cmd apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release
cmake --build build

case "$mode" in
  --test)
    ctest --test-dir build --output-on-failure -j "$(nproc)"
    ;;
  predict|--predict)
    ./build/tools/orrery predict
    ;;
  *)
    echo "usage: tools/setup.sh [--test]" >&2
    exit 2
    ;;
esac
