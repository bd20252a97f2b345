#!/usr/bin/env bash
# Builds the libFuzzer targets (fuzz/) with clang-19 and ASan+UBSan into ./build-fuzz, then runs
# each for SECONDS (default 30) starting from its checked-in seed corpus (fuzz/corpus/<target>;
# new inputs go to build-fuzz/corpus/<target>). A crash, a sanitizer report, an input taking over
# 10 s (compile_compare: 60 s) or 2 GiB (compile_compare: 4 GiB) leaves build-fuzz/crash-<target>-*
# and makes the script exit nonzero.
# Then, in the same build directory (same compiler and sanitizers, so the core libraries and the
# cpu_cpp plugin are built once), the sanitizer part of CI: the test executables in
# SANITIZER_TESTS run under ASan+UBSan with LeakSanitizer (options: scripts/sanitizers/env.sh);
# `scripts/sanitize.sh address` runs the whole suite that way. SECONDS=0 skips the fuzzing,
# STAX_FUZZ_NO_TESTS=1 the tests.
#   scripts/fuzz.sh [SECONDS]
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-30}
cmake -S . -B build-fuzz -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_C_COMPILER=clang-19 -DCMAKE_CXX_COMPILER=clang++-19 \
  -DSTAX_FUZZ=ON -DSTAX_SANITIZE=address,undefined >/dev/null
targets=(parse_graph config npy compile_compare)
# The sanitizer tests of CI: the hardening regressions (with the run-time errors of interpreted
# and compiled graphs and concurrent compiles and runs), the inputs an attacker controls (graph
# text, YAML, .npy), tensors, the cpu_cpp backend end to end, and the stax CLI loading every
# plugin (LeakSanitizer caught NVRTC's pool lost on unload there); then the compiled function
# (backward compiled on first use), device-resident runs on the emulated CUDA device (concurrent
# runs, streams) and the grid emulator's fibers, compiled index bounds, device memory and the
# backend configuration (each under 15 s under ASan on a loaded 2-core machine); cpu_cpp's
# streaming stores (the option's parsing, the alignment peel, a streamed output read by other
# threads of the pool and of an OpenMP team).
SANITIZER_TESTS=(hardening_test parser_test config_test npy_test tensor_test cpu_cpp_test
  cli_compile_test compiled_function_test cuda_resident_test cuda_emulator_test index_bounds_test
  device_memory_test compiler_config_test flash_attention_test streaming_store_test)
# A part of a binary whose whole would not fit (a gtest filter; the others run whole): of
# flash_attention_test, the tests that call the SDK's attention kernels in the test binary itself
# (instrumented; the JIT-compiled copies in a compiled graph are not): the register tiles' masked
# loads and stores and in-register transposes on AVX-512, AVX2 and portable against operands of
# their exact size, every output element written, both backward schedules; and the kernel through
# cpu_cpp's pool on 1 and 3 threads (~5 s of CPU, 11 s at loadavg ~4; the whole binary: 40 s).
declare -A SANITIZER_FILTERS=(
  [flash_attention_test]='FlashAttention.RegisterTileProductsGiveTheGemmBits:FlashAttention.EveryOutputElementIsWritten:FlashAttention.OnePassAndTwoPassBackwardsAgreeBitForBit:FlashAttention.SameBitsOnAnyThreadCount'
)
# (the CUDA tests exist only where the CUDA toolkit was found: keep the targets this build has)
available=$(cmake --build build-fuzz --target help)
kept=()
for t in "${SANITIZER_TESTS[@]}"; do
  if grep -q "^$t:" <<<"$available"; then kept+=("$t"); else echo "fuzz.sh: no target $t here"; fi
done
SANITIZER_TESTS=("${kept[@]}")
build=("${targets[@]/#/fuzz_}")
if [[ -z "${STAX_FUZZ_NO_TESTS:-}" ]]; then build+=("${SANITIZER_TESTS[@]}"); fi
cmake --build build-fuzz --target "${build[@]}"
source scripts/sanitizers/env.sh
# The libraries share clang's ASan runtime (-shared-libsan); it must be loaded first.
asan_runtime="$(clang++-19 -print-file-name=libclang_rt.asan-x86_64.so)"
if (( seconds > 0 )); then
  for t in "${targets[@]}"; do
    mkdir -p "build-fuzz/corpus/$t"
    timeout=10 rss=2048
    if [[ $t == compile_compare ]]; then timeout=60 rss=4096; fi
    echo "== fuzz_$t: ${seconds} s"
    # The fuzz targets report leaks per input themselves (-detect_leaks), not at exit.
    LD_PRELOAD="$asan_runtime" "build-fuzz/bin/fuzz_$t" -max_total_time="$seconds" -max_len=8192 \
      -timeout=$timeout -rss_limit_mb=$rss -print_final_stats=1 \
      -artifact_prefix="build-fuzz/crash-$t-" "build-fuzz/corpus/$t" "fuzz/corpus/$t"
  done
fi
if [[ -z "${STAX_FUZZ_NO_TESTS:-}" ]]; then
  for t in "${SANITIZER_TESTS[@]}"; do
    echo "== $t under ASan+UBSan"
    # (in the tests' directory, without a user's kernel cache, as ctest runs them)
    (cd build-fuzz/tests && STAX_CACHE_DIR=off "../bin/$t" --gtest_brief=1 \
      --gtest_filter="${SANITIZER_FILTERS[$t]:-*}")  # runtime: run path
  done
fi
