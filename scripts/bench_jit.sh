#!/usr/bin/env bash
# The idle-machine measurements of issue 27 items 5 and 6 (docs/jit_compile.md), in one go:
#   1. the GPT block's training step compiled cold and cached, 1 and 2 compile threads, with
#      XLA's compile of the same block in the same run (bench/compile_time.py);
#   2. softmax 4096² and 8192², Stax next to hand C++, 1 and 2 threads (bench_cpu W3);
#   3. with BASE=<another build directory>: both again against that build's cpu_cpp plugin in the
#      same run (compile time, and `stax bench` of softmax interleaved), the before / after.
#
#   scripts/bench_jit.sh [build_dir=build]          BASE=/path/to/main/build scripts/bench_jit.sh
#
# Needs the project's .venv (torch; jax for the XLA line) and a built tree (bench_compile_time,
# bench_cpu, stax). Run it on an idle machine: it prints /proc/loadavg first and warns above 1.5.
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
build="${1:-$here/build}"
py="$here/.venv/bin/python"
load="$(cut -d' ' -f1 /proc/loadavg)"
echo "loadavg: $(cat /proc/loadavg)"
awk -v l="$load" 'BEGIN { exit !(l > 1.5) }' && echo "WARNING: the machine is busy (loadavg $load > 1.5): the wall times below are not figures"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

echo "== 1. compile time: the GPT block, forward + backward"
"$py" "$here/bench/compile_time.py" --build "$build" --threads 1,2 --processes 5 --run 5 --xla \
  --keep "$tmp/gpt_block.fx"

echo "== 2. softmax (W3) against hand C++"
"$build/bin/bench_cpu" 9 4096,8192 1,2 W3

if [[ -n "${BASE:-}" ]]; then
  echo "== 3. against $BASE's cpu_cpp plugin, in the same run"
  cat > "$tmp/base.yaml" <<EOF
plugin_path: [$BASE/plugins]
devices:
  cpu: { backend: cpu_cpp, options: {} }
cache_dir: null
EOF
  cat > "$tmp/this.yaml" <<EOF
plugin_path: []
devices:
  cpu: { backend: cpu_cpp, options: {} }
cache_dir: null
EOF
  for round in 1 2; do
    for c in base this; do
      echo "-- compile time, $c plugin (round $round)"
      "$build/bin/bench_compile_time" "$tmp/gpt_block.fx" --config "$tmp/$c.yaml" \
        --threads 1,2 --processes 3 | grep -E "fw\+bw|threads"
    done
  done
  for n in 4096 8192; do
    cat > "$tmp/softmax$n.stax" <<EOF
graph(
    %x shape=($n, $n) : [num_users=1] = placeholder[target=x]
    %s shape=($n, $n) : [num_users=1] = call_function[target=tensorplay.ops.tp.softmax.int](args = (%x, -1), kwargs = {})
    return (s,)
)
EOF
    for threads in 1 2; do
      for round in 1 2 3; do
        for c in base this; do
          printf "softmax %s² %s thread(s), %s plugin: " "$n" "$threads" "$c"
          STAX_CACHE_DIR=off "$build/bin/stax" bench "$tmp/softmax$n.stax" --config "$tmp/$c.yaml" \
            --threads "$threads" --reps 20 | grep -o "median [0-9.]* ms"
        done
      done
    done
  done
fi
echo "loadavg at end: $(cat /proc/loadavg)"
