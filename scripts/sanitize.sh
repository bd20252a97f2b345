#!/usr/bin/env bash
# Sanitizer runs (issue 12), each in a build directory of its own, with the run-time options and
# suppressions of scripts/sanitizers/:
#   scripts/sanitize.sh address [CTEST ARGS]  ASan+UBSan (LeakSanitizer included): the whole suite
#                                             in build-fuzz (clang-19, shared with scripts/fuzz.sh);
#                                             e.g. `-R hardening` for part.
#   scripts/sanitize.sh thread [CTEST ARGS]   TSan: the whole suite in build-tsan (gcc): core,
#                                             plugins and tests instrumented (the JIT-compiled
#                                             kernels are not: TSan sees the host side of a run).
#   scripts/sanitize.sh thread-ci             TSan, the part CI runs (scripts/test.sh): builds only
#                                             the plugins and TSAN_CI_TESTS in build-tsan and runs
#                                             them (concurrent compiles on one Compiler, concurrent
#                                             runs of one CompiledGraph with and without a thread
#                                             pool, the cpu_cpp pool, the JIT from two threads
#                                             and its PCH built while others compile,
#                                             parallel compile batches, the kernel cache
#                                             from several processes).
# A report fails the test that produced it. Sanitizer builds multiply every ctest TIMEOUT
# (cmake/SanitizerTests.cmake). CI runs a bounded ASan+UBSan part (scripts/fuzz.sh builds it
# with the fuzz targets) and `thread-ci`; docs/testing.md says which.
set -euo pipefail
cd "$(dirname "$0")/.."
kind=${1:?usage: scripts/sanitize.sh address|thread|thread-ci [ctest args]}
shift
source scripts/sanitizers/env.sh
# The differential fuzz (compiled_fuzz_test, compiled_fuzz_strict_test) runs 300 graphs per
# reduction order in a plain build; under a sanitizer a graph costs ~20x (ASan: ~7 s each at
# loadavg ~9), so sanitizer runs take the first 40 of each order unless STAX_FUZZ_SEEDS says
# otherwise (the fixed regression cases and the CUDA / Triton slices run in full).
export STAX_FUZZ_SEEDS="${STAX_FUZZ_SEEDS:-40}"
configure_tsan() {
  cmake -S . -B build-tsan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DSTAX_SANITIZE=thread >/dev/null
}
case "$kind" in
  address)
    # The configuration of scripts/fuzz.sh (clang-19, ASan+UBSan, build-fuzz): the core, the
    # plugins and CI's sanitizer tests are built once for both.
    cmake -S . -B build-fuzz -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
      -DCMAKE_C_COMPILER=clang-19 -DCMAKE_CXX_COMPILER=clang++-19 \
      -DSTAX_FUZZ=ON -DSTAX_SANITIZE=address,undefined >/dev/null
    cmake --build build-fuzz -j"$(nproc)"
    ctest --test-dir build-fuzz --output-on-failure -j"$(nproc)" "$@"
    ;;
  thread)
    configure_tsan
    cmake --build build-tsan -j"$(nproc)"
    ctest --test-dir build-tsan --output-on-failure -j"$(nproc)" "$@"
    ;;
  thread-ci)
    # The whole of each binary (the concurrency tests are Hardening.Concurrent*,
    # CpuCpp.ThreadsGiveTheSameBits, ClangJit.ConcurrentCompilesFromTwoThreads, KernelCache's
    # cross-process tests, the thread pool's own tests, CompiledThreads' 1-3-thread kernels and
    # CudaResident's concurrent runs on their own streams (host emulation), ClangJitPch's
    # compiles on four threads while one of them builds the prelude's PCH outside the JIT's
    # set-up lock, ParallelCompile's cost-ordered batches on cpu_cpp's compile threads with the
    # disk writer's thread; the rest of each binary comes almost free once it is built).
    TSAN_CI_TESTS=(hardening_test cpu_cpp_test clang_jit_test kernel_cache_test thread_pool_test
                   compiled_threads_test cuda_resident_test clang_jit_pch_test
                   parallel_compile_test)
    configure_tsan
    # cuda_resident_test exists only where the CUDA toolkit was found.
    targets=()
    for t in "${TSAN_CI_TESTS[@]}"; do
      if ninja -C build-tsan -t query "$t" >/dev/null 2>&1; then
        targets+=("$t")
      else
        echo "== $t: not a target of this build (no CUDA toolkit?), skipped"
      fi
    done
    cmake --build build-tsan -j"$(nproc)" --target "${targets[@]}"
    for t in "${targets[@]}"; do
      echo "== $t under TSan"
      (cd build-tsan/tests && STAX_CACHE_DIR=off "../bin/$t" --gtest_brief=1)
    done
    ;;
  *)
    echo "scripts/sanitize.sh: unknown sanitizer '$kind' (address, thread or thread-ci)" >&2
    exit 2
    ;;
esac
