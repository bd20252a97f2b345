#!/bin/sh
# ctest bench_models_smoke: the Stax side of the model bench (bench/models/) at tiny shapes on 2
# threads (the parallel kernels; the 1-thread path is what most of the suite compiles): the
# make_fx printouts of the GPT block (forward; forward + backward), the ResNet BasicBlock train
# step, W1-W5 and gelu(x @ w).sum() parse, compile and run in Stax and, with the hand kernels,
# match torch eager's outputs (bench_models.py --check-only: no timing, no peer but eager).
# Exit 77 (a ctest skip) when the project's .venv has no torch.
#   bench_models_smoke.sh SOURCE_DIR WORKER
src=$1
worker=$2
py=$src/.venv/bin/python
if [ ! -x "$py" ] || ! "$py" -c "import torch" 2>/dev/null; then
  echo "skipped: $src/.venv has no torch (scripts/setup.sh makes it)"
  exit 77
fi
exec "$py" "$src/bench/models/bench_models.py" --check-only --quick --threads 2 \
  --systems stax,hand,eager --worker "$worker"
