#!/usr/bin/env bash
# The whole table of issue 9 in one command: Stax (cpu_cpp, default options) next to hand-written
# C++ (OpenMP + OpenBLAS), torch eager (the .venv's torch 2.x, STAX_TORCH_PYTHON, same threads)
# and the memory-bandwidth roofline, for W1/W3/W4/W5 at 4096² and 8192², W1 per call at 64×128,
# W2 (gelu(x@W).sum() forward + backward, 1024³) and an MLP training step, at 1 and 2 threads.
#
#   scripts/bench_cpu.sh [reps=9] [sizes=4096,8192] [threads=1,2]
#
# Builds bench_cpu into ./build (configuring it if needed) and runs it. Several minutes; the
# figures mean something only on an idle machine (the loadavg is printed at start and end).
set -euo pipefail
cd "$(dirname "$0")/.."
if [ ! -f build/build.ninja ]; then
  cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
fi
cmake --build build --target bench_cpu stax_all_plugins >/dev/null
exec ./build/bin/bench_cpu "${1:-9}" "${2:-4096,8192}" "${3:-1,2}"
