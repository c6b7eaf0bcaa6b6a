#!/usr/bin/env bash
# Set-up in one command on a fresh Debian 12 machine: installs what is missing (Debian packages, and the HTML
# report's plotting library from npm), builds Orrery (Release, in ./build), then either predicts the built-in
# default scenario or, with --test, runs the whole test suite through ctest, and then a second build
# (./build-sanitize: clang with AddressSanitizer and UndefinedBehaviorSanitizer, and the libFuzzer scenario
# fuzzer) and its ctest subset, labelled `sanitize`: the unit tests of parsing, lowering, the engine and search, the
# CLI's bad-input checks, the fuzzer's findings and a 30-second fuzzing run (tests/fuzz/README.md). Any failure, or any sanitizer finding, fails the command.
#   tools/setup.sh          install, build, `orrery predict`
#   tools/setup.sh --test   install, build, ctest; sanitizer build, its ctest
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$here"
mode="${1:-predict}"

# libopenmpi-dev and openmpi-bin: `orrery search --mpi` and its two-rank test. zlib1g-dev: gzip Kineto traces.
packages=(g++ cmake ninja-build python3 libboost-graph-dev nlohmann-json3-dev libcli11-dev libfmt-dev
          libeigen3-dev catch2 libopenmpi-dev openmpi-bin zlib1g-dev)
# npm: the HTML report's plotting library (tools/report-web), unless an npm is already on PATH.
if ! command -v npm >/dev/null 2>&1; then packages+=(npm); fi
# clang and libclang-rt-14-dev (its ASan, UBSan and libFuzzer runtimes): the sanitizer build of --test. chromium:
# the HTML report's browser test (tests/tools/report_browser_test.py), which ctest skips without it.
if [ "$mode" = "--test" ]; then packages+=(clang libclang-rt-14-dev chromium); fi
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

# Vega, Vega-Lite and vega-embed, pinned by tools/report-web/package-lock.json, which the build compiles into the
# binary for the HTML reports: installed when absent or older than the lockfile (tools/report-web/README.md).
web=tools/report-web
if [ ! -f "$web/node_modules/.package-lock.json" ] || [ "$web/package-lock.json" -nt "$web/node_modules/.package-lock.json" ]; then
  echo "setup: npm ci in $web"
  (cd "$web" && npm ci --no-audit --no-fund)
fi

cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release
cmake --build build

case "$mode" in
  --test)
    ctest --test-dir build --output-on-failure -j "$(nproc)"
    # -O1 with line tables: readable sanitizer stack traces at about half the cost of -O0; asserts stay on.
    cmake -S . -B build-sanitize -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_COMPILER=clang++ \
      -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -gline-tables-only" -DORRERY_SANITIZE=ON -DORRERY_FUZZ=ON -DORRERY_MPI=OFF
    # Only what the sanitize-labelled tests run: the command line, the two Catch2 programs and the fuzzer (the
    # benchmarks, the soak test and the calibration tools are built and tested once, above).
    cmake --build build-sanitize --target orrery orrery_tests orrery_engine_tests orrery_scenario_fuzzer
    ASAN_OPTIONS=detect_leaks=1:strict_string_checks=1:detect_stack_use_after_return=1 \
    UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
      ctest --test-dir build-sanitize --output-on-failure -j "$(nproc)" -L sanitize
    ;;
  predict|--predict)
    ./build/tools/orrery predict
    ;;
  *)
    echo "usage: tools/setup.sh [--test]" >&2
    exit 2
    ;;
esac
