#!/usr/bin/env bash
# README command 2: set up the machine, build into ./build, check `pip install .` in a fresh venv
# (scripts/test_wheel.sh), run each libFuzzer target for 30 s (scripts/fuzz.sh: a clang-19
# ASan+UBSan build in build-fuzz) and run the whole suite with ctest (last, so that its summary
# closes the output).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
# The Python package (python/, ctest python_tests) builds against the project's .venv.
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DPython_EXECUTABLE="$PWD/.venv/bin/python" >/dev/null
cmake --build build -j"$(nproc)"
# `pip install .` in a fresh venv (the Python package's wheel; docs/python.md): right after the
# main build, whose objects ccache then serves (~4 min; at most 25).
timeout 1500 scripts/test_wheel.sh
scripts/fuzz.sh 30
scripts/sanitize.sh thread-ci  # TSan: the concurrency binaries (build-tsan)
ctest --test-dir build --output-on-failure -j"$(nproc)"
