#!/usr/bin/env bash
# The model bench of issue 27 item 7 in one command: Stax next to hand-written C++, torch eager,
# Inductor and XLA on the GPT block (forward; forward + backward), a ResNet BasicBlock train step,
# W1-W5 at 4096² and 8192² and gelu(x @ W).sum() forward + backward at 1024³, on 1 and 2 threads
# in one interleaved run, then compile time cold and cached (bench/README.md, "bench_models").
#
#   scripts/bench_models.sh [--quick] [bench/models/bench_models.py options]
#
# --quick: tiny shapes, one round: checks that the whole bench works (a few minutes, most of it
# Inductor's cold compiles), not figures. Without it: an estimated 20-30 minutes, and figures only
# on an idle machine (the load average is printed before and after; above 1.5 the run says its
# figures are not results). Sets up jax (scripts/setup_bench.sh) and builds the Stax worker
# into ./build (configuring it if needed) first.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup_bench.sh
if [ ! -f build/build.ninja ]; then
  cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
fi
cmake --build build --target bench_model_worker stax_all_plugins >/dev/null
exec .venv/bin/python bench/models/bench_models.py --worker build/bin/bench_model_worker "$@"
