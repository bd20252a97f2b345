"""Shared fixtures of the Python package's tests (ctest python_tests; docs/python.md).

The package is imported from the build tree (PYTHONPATH=<build>/python, set by ctest). The
kernel cache goes to a temporary directory for the session (STAX_CACHE_DIR), so the tests neither
read nor fill ~/.cache/stax.
"""
import os
import shutil
import tempfile

import pytest

_CACHE = None
if "STAX_CACHE_DIR" not in os.environ:
    _CACHE = tempfile.mkdtemp(prefix="stax-pytest-cache-")
    os.environ["STAX_CACHE_DIR"] = _CACHE

import stax  # noqa: E402  (after STAX_CACHE_DIR)

from helpers import EXAMPLES, REPO  # noqa: E402


def pytest_sessionfinish(session, exitstatus):
    if _CACHE:
        shutil.rmtree(_CACHE, ignore_errors=True)


@pytest.fixture(scope="session")
def repo():
    return REPO


@pytest.fixture(scope="session")
def examples():
    return EXAMPLES


@pytest.fixture(scope="session")
def cpu():
    """One cpu_cpp Compiler for the session (its JIT starts once)."""
    return stax.Compiler("cpu")
