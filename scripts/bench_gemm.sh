#!/usr/bin/env bash
# The GEMM table of docs/gemm.md: Stax's GEMM, the GEMM libraries (Debian's and PyPI's) and the
# peers torch and XLA on the shapes of real blocks, 1 and 2 threads, in interleaved rounds (one
# process per library and thread count: the libraries' symbols clash), then the table.
#
#   scripts/bench_gemm.sh [rounds=3] [threads=1,2] [libs=all]
#
# Run it on an idle machine (the load average is printed before and after); on a busy one only
# the 1-thread "by process CPU time" table means anything. Libraries that are not installed are
# listed as skipped with the file looked for (scripts/setup.sh does not install them: apt-get
# install libopenblas0-serial libblis4-pthread libdnnl2; .venv/bin/pip install mkl onednn
# scipy-openblas32 'jax[cpu]'). BUILD (default build) is the build directory; SHAPES (default: the
# table's four) is bench_gemm's --shapes, e.g. SHAPES=gpt for the GPT block's products.
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${1:-3}
THREADS=${2:-1,2}
LIBS=${3:-stax,xla,torch,mkl,onednn-debian,onednn-pypi,openblas-pypi,blis,openblas,openblas-serial}
BUILD=${BUILD:-build}
SHAPES=${SHAPES:-}
PY=.venv/bin/python
[ -x "$PY" ] || PY=python3
cmake --build "$BUILD" --target bench_gemm >/dev/null
OUT=$(mktemp /tmp/bench_gemm.XXXXXX)
echo "# $(date -u +%Y-%m-%dT%H:%MZ) $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2-)"
echo "# load before: $(cat /proc/loadavg)"
"$BUILD/bin/bench_gemm" --peak >>"$OUT"
for round in $(seq "$ROUNDS"); do
  for t in ${THREADS//,/ }; do
    for lib in ${LIBS//,/ }; do
      case $lib in
        torch | xla) cmd=("$PY" bench/gemm_peers.py --peer "$lib" --threads "$t") ;;
        *) cmd=("$BUILD/bin/bench_gemm" --lib "$lib" --threads "$t") ;;
      esac
      [ -z "$SHAPES" ] || cmd+=(--shapes "$SHAPES")
      # PyPI's oneDNN finds its runtime (SYCL, SVML) in the venv's lib directory.
      if ! LD_LIBRARY_PATH=$PWD/.venv/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} \
        timeout 600 "${cmd[@]}" >>"$OUT" 2>/dev/null; then
        echo "SKIP lib=$lib threads=$t: the run failed (round $round)" >>"$OUT"
      fi
    done
  done
done
echo "# load after: $(cat /proc/loadavg)"
echo "# raw results: $OUT"
python3 bench/gemm_table.py "$OUT"
