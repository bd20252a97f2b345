#!/usr/bin/env bash
# The smallest address-space limit (`ulimit -v`, MiB) at which `stax run` of each example
# succeeds, on the interpreter and compiled (cpu_cpp), found by bisection; every run is killed
# after 60 s, so a hang shows as "hang" instead of stalling the script (the
# figures: docs/gemm.md, "Memory limits").
#   scripts/memory_limits.sh [build=build] [examples...]
set -uo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:-build}
shift || true
EXAMPLES=("$@")
[ ${#EXAMPLES[@]} -gt 0 ] || EXAMPLES=(mlp_layer example_1_1 softmax layer_norm example_5_1_forward cnn_train_step)
STAX=$BUILD/bin/stax

# Exit status of `stax ARGS` under a limit of $1 MiB (137: killed after 60 s).
limited() {
  local mib=$1
  shift
  STAX_CACHE_DIR=off bash -c "ulimit -v $((mib * 1024)); exec timeout -s KILL 60 $STAX $*" \
    >/dev/null 2>&1
}

smallest() {
  local lo=16 hi=4096
  limited "$hi" "$@" || { echo "fails at $hi MiB (exit $?)"; return; }
  while [ $((hi - lo)) -gt 4 ]; do
    local mid=$(((lo + hi) / 2))
    if limited "$mid" "$@"; then hi=$mid; else
      [ $? -eq 137 ] && { echo "hang at $mid MiB"; return; }
      lo=$mid
    fi
  done
  echo "$hi MiB"
}

echo "# $(date -u +%Y-%m-%d) $($STAX --version 2>/dev/null | head -1)"
printf "| example | interpreter | compiled (cpu_cpp) |\n|---|---|---|\n"
for ex in "${EXAMPLES[@]}"; do
  f=examples/$ex.stax
  [ -f "$f" ] || continue
  printf "| %s | %s | %s |\n" "$ex" "$(smallest run "$f")" "$(smallest run --compiled "$f")"
done
