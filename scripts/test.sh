#!/usr/bin/env bash
# README command 2: set up the machine, run each libFuzzer target for 30 s (scripts/fuzz.sh: a
# clang-19 ASan+UBSan build in build-fuzz), build into ./build and run the whole suite with ctest
# (last, so that its summary closes the output).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j"$(nproc)"
scripts/fuzz.sh 30
scripts/sanitize.sh thread-ci  # TSan: the concurrency binaries (build-tsan)
ctest --test-dir build --output-on-failure -j"$(nproc)"
