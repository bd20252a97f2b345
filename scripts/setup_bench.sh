#!/usr/bin/env bash
# What the model bench needs beyond scripts/setup.sh: jax[cpu] (XLA, a peer of the bench) in the
# project's .venv, pinned in scripts/requirements-bench.txt, installed with the .venv's own pins
# (scripts/requirements-venv.txt) as constraints so that torch and numpy stay as they are.
# Idempotent and quiet when all is there. Not part of CI (scripts/test.sh never calls it).
set -euo pipefail
cd "$(dirname "$0")/.."
[ -x .venv/bin/python ] || scripts/setup.sh
REQ=scripts/requirements-bench.txt
STAMP=.venv/.stax-bench-requirements
if ! cmp -s "$REQ" "$STAMP" || ! .venv/bin/python -c "import jax" 2>/dev/null; then
  echo "setup_bench: installing $(grep -v '^#' "$REQ" | xargs) into .venv"
  .venv/bin/python -m pip install -q -r "$REQ" -c scripts/requirements-venv.txt
  cp "$REQ" "$STAMP"
fi
