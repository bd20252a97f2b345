#!/usr/bin/env bash
# Sanitizer runs (issue 12), each in a build directory of its own, with the run-time options and
# suppressions of scripts/sanitizers/:
#   scripts/sanitize.sh address [CTEST ARGS]  ASan+UBSan (LeakSanitizer included): the whole suite
#                                             in build-fuzz (clang-19, shared with scripts/fuzz.sh);
#                                             e.g. `-R hardening` for part.
#   scripts/sanitize.sh thread                TSan: the concurrency tests in build-tsan (gcc):
#                                             concurrent compiles on one Compiler, concurrent runs
#                                             of one CompiledGraph (with and without a thread
#                                             pool), the cpu_cpp pool, the JIT from two threads.
# A report fails the test that produced it. CI runs a bounded ASan+UBSan part instead (scripts/
# fuzz.sh builds it with the fuzz targets); README.md says which.
set -euo pipefail
cd "$(dirname "$0")/.."
kind=${1:?usage: scripts/sanitize.sh address|thread [ctest args]}
shift
source scripts/sanitizers/env.sh
case "$kind" in
  address)
    # The configuration of scripts/fuzz.sh (clang-19, ASan+UBSan, build-fuzz): the core, the
    # plugins and CI's sanitizer tests are built once for both.
    cmake -S . -B build-fuzz -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
      -DCMAKE_C_COMPILER=clang-19 -DCMAKE_CXX_COMPILER=clang++-19 \
      -DSTAX_FUZZ=ON -DSTAX_SANITIZE=address,undefined >/dev/null
    cmake --build build-fuzz -j"$(nproc)"
    ctest --test-dir build-fuzz --output-on-failure -j"$(nproc)" --timeout 2400 "$@"
    ;;
  thread)
    cmake -S . -B build-tsan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
      -DSTAX_SANITIZE=thread >/dev/null
    cmake --build build-tsan -j"$(nproc)" --target hardening_test cpu_cpp_test clang_jit_test \
      stax_plugin_cpu_cpp
    # The whole of each (the concurrency tests are Hardening.Concurrent*,
    # CpuCpp.ThreadsGiveTheSameBits and ClangJit.ConcurrentCompilesFromTwoThreads).
    for t in hardening_test cpu_cpp_test clang_jit_test; do
      echo "== $t under TSan"
      "build-tsan/bin/$t" --gtest_brief=1
    done
    ;;
  *)
    echo "scripts/sanitize.sh: unknown sanitizer '$kind' (address or thread)" >&2
    exit 2
    ;;
esac
