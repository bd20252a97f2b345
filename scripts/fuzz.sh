#!/usr/bin/env bash
# Builds the libFuzzer targets (fuzz/) with clang-19 and ASan+UBSan into ./build-fuzz, then runs
# each for SECONDS (default 30) starting from its checked-in seed corpus (fuzz/corpus/<target>;
# new inputs go to build-fuzz/corpus/<target>). A crash, a sanitizer report, an input taking over
# 10 s or 2 GiB leaves build-fuzz/crash-<target>-* and makes the script exit nonzero.
#   scripts/fuzz.sh [SECONDS]
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-30}
cmake -S . -B build-fuzz -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_C_COMPILER=clang-19 -DCMAKE_CXX_COMPILER=clang++-19 \
  -DSTAX_FUZZ=ON -DSTAX_SANITIZE=address,undefined >/dev/null
targets=(parse_graph config npy)
cmake --build build-fuzz --target "${targets[@]/#/fuzz_}"
# The libraries share clang's ASan runtime (-shared-libsan); it must be loaded first.
asan_runtime="$(clang++-19 -print-file-name=libclang_rt.asan-x86_64.so)"
for t in "${targets[@]}"; do
  mkdir -p "build-fuzz/corpus/$t"
  echo "== fuzz_$t: ${seconds} s"
  LD_PRELOAD="$asan_runtime" "build-fuzz/bin/fuzz_$t" -max_total_time="$seconds" -max_len=8192 -timeout=10 \
    -rss_limit_mb=2048 -print_final_stats=1 \
    -artifact_prefix="build-fuzz/crash-$t-" "build-fuzz/corpus/$t" "fuzz/corpus/$t"
done
