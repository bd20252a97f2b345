#!/usr/bin/env bash
# `pip install .` in a fresh virtual environment, then `import stax` there with nothing else on
# the path: plugins, configs and the SDK must come from the wheel. Prints the time each step took.
#
#   scripts/test_wheel.sh [WORK_DIR]     (default: a temporary directory, removed afterwards)
#
# The wheel is built in build-wheel/ (pyproject.toml): after `cmake --build build` ccache serves
# the compiles, and a second run of this script rebuilds nothing. pip's cache (~/.cache/pip)
# holds scikit-build-core, nanobind and numpy after the first run. While the check runs,
# build-wheel/ is renamed away, so nothing can be loaded from the build tree.
# Not part of scripts/test.sh: docs/python.md gives the measured time and why.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
WORK=${1:-}
if [ -z "$WORK" ]; then
  WORK=$(mktemp -d /tmp/stax-wheel-XXXXXX)
  trap 'rm -rf "$WORK"' EXIT
fi
PY=${STAX_WHEEL_PYTHON:-python3}
stamp() { date +%s.%N; }
elapsed() { awk -v a="$1" -v b="$(stamp)" 'BEGIN { printf "%.1f s", b - a }'; }

t=$(stamp)
"$PY" -m venv "$WORK/venv"
"$WORK/venv/bin/python" -m pip install -q --upgrade pip
"$WORK/venv/bin/python" -m pip install -q numpy
echo "test_wheel: fresh venv with numpy: $(elapsed "$t")"

t=$(stamp)
"$WORK/venv/bin/python" -m pip install -q "$ROOT"
echo "test_wheel: pip install . (wheel build + install): $(elapsed "$t")"

hidden=""
if [ -d build-wheel ]; then
  hidden=build-wheel.hidden-$$
  mv build-wheel "$hidden"
  trap 'mv "$ROOT/'"$hidden"'" "$ROOT/build-wheel"; rm -rf "$WORK"' EXIT
fi
t=$(stamp)
cd "$WORK"  # not the repository: `import stax` must find the installed package only
STAX_CACHE_DIR=off "$WORK/venv/bin/python" - "$WORK/venv" <<'PY'
import os, sys
import numpy as np
import stax

venv = os.path.realpath(sys.argv[1])
pkg = os.path.dirname(os.path.realpath(stax.__file__))
assert pkg.startswith(venv), f"stax imported from {pkg}, not the fresh venv"
assert os.path.realpath(stax.plugin_dir()) == os.path.join(pkg, "plugins"), stax.plugin_dir()
assert os.path.realpath(stax.configs_dir()) == os.path.join(pkg, "configs"), stax.configs_dir()
assert os.path.isfile(os.path.join(pkg, "include", "stax", "plugin_api.h"))
assert os.path.isfile(os.path.join(stax.cmake_dir(), "StaxSDKConfig.cmake"))
names = {p["name"]: p for p in stax.plugins()}
assert names["cpu_cpp"]["error"] is None, names["cpu_cpp"]
assert os.path.dirname(os.path.realpath(names["cpu_cpp"]["path"])) == os.path.join(pkg, "plugins")
# cpu_cpp's JIT and Clang frontend, dlopened from the plugin's directory by the first compile below
assert os.path.isfile(os.path.join(pkg, "plugins", "cpu_cpp_jit.so"))
assert os.path.isfile(os.path.join(pkg, "plugins", "cpu_cpp_clang_frontend.so"))

g = stax.Graph()
x = g.placeholder("x", (64, 128))
y = g.placeholder("y", (64, 128))
g.output(g.call("sum.dim_IntList", g.call("mul.Scalar", g.call("relu", g.call("add.Tensor", x, y)), 2), [-1]))
f = stax.Compiler("cpu").compile(g)
a = np.random.default_rng(0).standard_normal((64, 128)).astype(np.float32)
b = np.random.default_rng(1).standard_normal((64, 128)).astype(np.float32)
np.testing.assert_allclose(f(a, b), (np.maximum(a + b, 0) * 2).sum(-1), rtol=1e-5, atol=1e-5)
cf = stax.grad(stax.Graph.parse(str(g)), wrt=["x"])
(gx,) = cf(a, b).backward(np.ones(64, np.float32))
np.testing.assert_array_equal(gx, np.where(a + b > 0, 2.0, 0.0).astype(np.float32))
# torch.compile(model, backend="stax") finds the backend through this entry point, without an
# `import stax` first (torch is not in this venv: the metadata and the module's files are checked).
from importlib.metadata import entry_points
eps = {e.name: e for e in entry_points(group="torch_dynamo_backends")}
assert "stax" in eps and eps["stax"].value == "stax.dynamo:backend", eps
for f in ("__init__.py", "backend.py", "aten_trace.py", "fx_import.py", "runtime.py"):
    assert os.path.isfile(os.path.join(pkg, "dynamo", f)), f"the wheel lacks stax/dynamo/{f}"
print("test_wheel: import stax from", pkg, "| plugins:", ", ".join(sorted(names)))
PY
echo "test_wheel: checks in the fresh venv: $(elapsed "$t")"
echo "test_wheel: OK"
