# Run-time options of the sanitizer builds (sourced by scripts/sanitize.sh and scripts/fuzz.sh).
#   detect_leaks=1                LeakSanitizer at exit of every test process (ASan builds).
#   allocator_may_return_null=1   a request the allocator cannot satisfy (the 2^50-byte tensors
#                                 of Hardening.AllocationFailure*) returns null, which Stax turns
#                                 into "cannot allocate N bytes" naming the node, as without ASan
#                                 (the default aborts the process instead).
#   strict_string_checks=1, check_initialization_order=1: stricter checks, off by default.
#   halt_on_error / abort_on_error=0: stop at the first report with a nonzero exit (the test
#                                 fails; no core dump).
# LSan's suppressions (lsan.supp) hold LLVM-internal allocations only; UBSan stops at the first
# report (the build also has -fno-sanitize-recover=all) and prints its stack. TSan (with
# allocator_may_return_null=1 for the same reason as ASan) reads
# tsan.supp (uninstrumented third-party code only) and stops at the first report.
_stax_san_dir="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
export ASAN_OPTIONS="detect_leaks=1:allocator_may_return_null=1:strict_string_checks=1:check_initialization_order=1:halt_on_error=1:abort_on_error=0"
export LSAN_OPTIONS="suppressions=${_stax_san_dir}/lsan.supp:print_suppressions=0"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
export TSAN_OPTIONS="suppressions=${_stax_san_dir}/tsan.supp:halt_on_error=1:second_deadlock_stack=1:allocator_may_return_null=1"
unset _stax_san_dir
