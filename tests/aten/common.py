"""Shared helpers of the torch-backed tests (tests/aten/): finding the stax binary, listing the
registry (`stax ops --tsv`), reading tests/aten/expected_failures.txt, and skipping cleanly."""
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
SKIP = 77  # ctest SKIP_RETURN_CODE


def skip(why):
    print("SKIPPED: " + why)
    sys.exit(SKIP)


def import_torch():
    """torch 2.x from the project's .venv (ctest runs these scripts with STAX_TORCH_PYTHON,
    cmake/StaxHelpers.cmake); skips, saying why, when it does not import or is older."""
    try:
        import torch  # noqa: F401
    except Exception as e:  # not installed, or a broken install (numpy ABI)
        skip("torch is not importable by %s (%s); scripts/setup.sh installs torch 2.x in the "
             ".venv (STAX_TORCH_PYTHON names the interpreter)" % (sys.executable, e))
    if int(torch.__version__.split(".")[0]) < 2:
        skip("%s has torch %s; the reference is torch 2.x (scripts/setup.sh: the .venv)"
             % (sys.executable, torch.__version__))
    return torch


def stax_binary():
    exe = os.environ.get("STAX_BIN")
    if not exe or not os.path.exists(exe):
        sys.exit("STAX_BIN is not set to the stax binary (ctest sets it)")
    return exe


def registry(stax):
    """{name: (category, differentiable, schema text)} from `stax ops --tsv`."""
    out = subprocess.run([stax, "ops", "--tsv"], check=True, capture_output=True, text=True).stdout
    ops = {}
    for line in out.splitlines():
        name, cat, grad, schema = line.split("\t")
        ops[name] = (cat, grad == "grad", schema)
    return ops


def complex_ops(stax):
    """The names of the ops that take complex tensors (`stax ops --complex --tsv`)."""
    out = subprocess.run([stax, "ops", "--complex", "--tsv"], check=True, capture_output=True,
                         text=True).stdout
    return {line.split("\t")[0] for line in out.splitlines()}


def expected_failures(kind):
    """{key: reason} of the lines 'KIND KEY: reason' of expected_failures.txt."""
    out = {}
    with open(os.path.join(HERE, "expected_failures.txt")) as f:
        for n, line in enumerate(f, 1):
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            k, rest = line.split(None, 1)
            if ":" not in rest:
                sys.exit("expected_failures.txt:%d: expected 'KIND KEY: reason'" % n)
            key, reason = rest.split(":", 1)
            if not reason.strip():
                sys.exit("expected_failures.txt:%d: '%s' has no reason" % (n, key))
            if k == kind:
                out[key.strip()] = reason.strip()
    return out
