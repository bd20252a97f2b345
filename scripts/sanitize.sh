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
#                                             pool, the cpu_cpp pool, the JIT from two threads,
#                                             the kernel cache from several processes).
# A report fails the test that produced it. Sanitizer builds multiply every ctest TIMEOUT
# (cmake/SanitizerTimeouts.cmake). CI runs a bounded ASan+UBSan part (scripts/fuzz.sh builds it
# with the fuzz targets) and `thread-ci`; README.md says which.
set -euo pipefail
cd "$(dirname "$0")/.."
kind=${1:?usage: scripts/sanitize.sh address|thread|thread-ci [ctest args]}
shift
source scripts/sanitizers/env.sh
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
    # CpuCpp.ThreadsGiveTheSameBits, ClangJit.ConcurrentCompilesFromTwoThreads and KernelCache's
    # cross-process tests; the rest of each binary comes almost free once it is built).
    TSAN_CI_TESTS=(hardening_test cpu_cpp_test clang_jit_test kernel_cache_test)
    configure_tsan
    cmake --build build-tsan -j"$(nproc)" --target "${TSAN_CI_TESTS[@]}"
    for t in "${TSAN_CI_TESTS[@]}"; do
      echo "== $t under TSan"
      (cd build-tsan/tests && STAX_CACHE_DIR=off "../bin/$t" --gtest_brief=1)
    done
    ;;
  *)
    echo "scripts/sanitize.sh: unknown sanitizer '$kind' (address, thread or thread-ci)" >&2
    exit 2
    ;;
esac
