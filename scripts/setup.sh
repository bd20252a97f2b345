#!/usr/bin/env bash
# Installs everything Stax needs on a fresh Debian 12 machine. Idempotent; quiet when all is there.
set -euo pipefail
cd "$(dirname "$0")/.."
PKGS=(cmake ninja-build g++ ccache libgtest-dev libgmock-dev libcli11-dev libyaml-cpp-dev
      libboost-dev libboost-filesystem-dev libboost-context-dev libopenblas-dev libsleef-dev
      libfftw3-dev libopenblas0-serial
      llvm-19-dev libclang-19-dev libclang-cpp19-dev clang-19 libclang-rt-19-dev
      python3 python3-dev python3-pip python3-venv)
missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
fi
# The project's virtual environment (.venv, git-ignored): torch 2.x from PyPI (the reference of
# every torch-backed test, STAX_TORCH_PYTHON in cmake/StaxHelpers.cmake), numpy, pytest, expecttest
# (torch's OpInfo database imports it) and the Python package's build tools, pinned in
# scripts/requirements-venv.txt. Rebuilt only when that file changes; pip's own cache
# (~/.cache/pip) keeps the downloads between runs.
VENV=.venv
REQ=scripts/requirements-venv.txt
if [ ! -x "$VENV/bin/python" ] || ! cmp -s "$REQ" "$VENV/.stax-requirements"; then
  echo "setup: creating $VENV (torch 2.x from PyPI: a few minutes the first time)"
  python3 -m venv "$VENV"
  "$VENV/bin/python" -m pip install -q --upgrade pip
  "$VENV/bin/python" -m pip install -q -r "$REQ"
  cp "$REQ" "$VENV/.stax-requirements"
fi
# numpy is used by the tests that compare against numpy (they skip without it).
if ! python3 -c "import numpy" 2>/dev/null; then
  echo "setup: installing numpy"
  python3 -m pip install -q numpy 2>/dev/null || python3 -m pip install -q --break-system-packages numpy || true
fi
# Triton (PyPI, pinned) for the cuda_triton plugin: its compiler (to cubins, no GPU needed) and its
# interpreter (TRITON_INTERPRET=1, on the CPU, with numpy). Its tests skip without it.
TRITON_VERSION=3.9.0
if ! python3 -c "import sys, triton; sys.exit(triton.__version__ != '$TRITON_VERSION')" 2>/dev/null; then
  echo "setup: installing triton $TRITON_VERSION"
  python3 -m pip install -q "triton==$TRITON_VERSION" 2>/dev/null ||
    python3 -m pip install -q --break-system-packages "triton==$TRITON_VERSION" ||
    echo "setup: triton was not installed: the cuda_triton tests will skip"
fi
# The bundled ptxas must be executable (an unpack without modes loses the bit).
tbin=$(python3 -c "import os, triton; print(os.path.join(os.path.dirname(triton.__file__), 'backends', 'nvidia', 'bin'))" 2>/dev/null || true)
if [ -n "$tbin" ] && [ -d "$tbin" ]; then chmod +x "$tbin"/* 2>/dev/null || true; fi
