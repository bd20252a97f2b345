#!/usr/bin/env bash
# W1 ((x + y).relu() * 2).sum(-1) and W4 (x * x).sum(-1) on 1 and 2 threads (issue 27 item 4):
# `stax bench` medians in interleaved rounds, with the pool's idle spin at its default (100 us)
# and long (2 ms, about what OpenMP's default spin gives Inductor's workers), to tell wake-up
# latency from the kernels' own scaling (docs/gemm.md, "Mid-size reductions"). Run it on an idle
# machine: the load average is printed before and after.
#   scripts/bench_reduction_scaling.sh [sizes=4096] [rounds=3] [reps=30]
set -euo pipefail
cd "$(dirname "$0")/.."
SIZES=${1:-4096}
ROUNDS=${2:-3}
REPS=${3:-30}
BUILD=${BUILD:-build}
STAX=$BUILD/bin/stax
DIR=$(mktemp -d /tmp/stax_scaling.XXXXXX)
trap 'rm -rf "$DIR"' EXIT
for n in ${SIZES//,/ }; do
  cat >"$DIR/W4_$n.stax" <<EOF
graph(
    %x shape=($n, $n) = placeholder[target=x]
    %m shape=($n, $n) = call_function[target=tp.mul.Tensor](args = (%x, %x))
    %s shape=($n,) = call_function[target=tp.sum.dim_IntList](args = (%m, [-1]))
    return (s,)
)
EOF
  cat >"$DIR/W1_$n.stax" <<EOF
graph(
    %x shape=($n, $n) = placeholder[target=x]
    %y shape=($n, $n) = placeholder[target=y]
    %a shape=($n, $n) = call_function[target=tp.add.Tensor](args = (%x, %y))
    %r shape=($n, $n) = call_function[target=tp.relu.default](args = (%a,))
    %m shape=($n, $n) = call_function[target=tp.mul.Tensor](args = (%r, 2))
    %s shape=($n,) = call_function[target=tp.sum.dim_IntList](args = (%m, [-1]))
    return (s,)
)
EOF
done
for spin in 100 2000; do
  cat >"$DIR/spin$spin.yaml" <<EOF
plugin_path: [$PWD/$BUILD/plugins]
cache: off
devices:
  cpu:
    backend: cpu_cpp
    options:
      pool_spin_us: $spin
EOF
done
echo "# $(date -u +%Y-%m-%dT%H:%MZ) load before: $(cat /proc/loadavg)"
declare -A best
for round in $(seq "$ROUNDS"); do
  for n in ${SIZES//,/ }; do
    for w in W1 W4; do
      for t in 1 2; do
        for spin in 100 2000; do
          ms=$("$STAX" bench -c "$DIR/spin$spin.yaml" --threads "$t" --reps "$REPS" "$DIR/${w}_$n.stax" 2>/dev/null |
            sed -n 's/.*median \([0-9.]*\) ms.*/\1/p' | head -1)
          key="$w $n $t $spin"
          if [ -n "$ms" ] && { [ -z "${best[$key]:-}" ] || awk "BEGIN{exit !($ms < ${best[$key]})}"; }; then
            best[$key]=$ms
          fi
        done
      done
    done
  done
done
echo "# load after: $(cat /proc/loadavg)"
echo "| workload | size | 1 thread (ms) | 2 threads (ms) | speed-up | 2 threads, spin 2 ms (ms) | speed-up |"
echo "|---|---|---|---|---|---|---|"
for n in ${SIZES//,/ }; do
  for w in W1 W4; do
    one=${best["$w $n 1 100"]:-nan}
    two=${best["$w $n 2 100"]:-nan}
    two_long=${best["$w $n 2 2000"]:-nan}
    awk -v w="$w" -v n="$n" -v a="$one" -v b="$two" -v c="$two_long" \
      'BEGIN{printf "| %s | %s | %.3f | %.3f | %.2fx | %.3f | %.2fx |\n", w, n, a, b, a/b, c, a/c}'
  done
done
