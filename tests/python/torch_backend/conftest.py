"""The torch backend's tests: Dynamo's caches are reset before each test.

torch.compile(module) compiles the shared nn.Module call path; after
torch._dynamo.config.recompile_limit (8) compiles of one code object Dynamo stops compiling
it and runs eager silently. Each test compiles fresh modules, so each starts from a reset
(and checks stax.explain, so a silent eager run fails it).
"""
import pytest

torch = pytest.importorskip("torch")


@pytest.fixture(autouse=True)
def _reset_dynamo():
    torch._dynamo.reset()
    yield


# The session machine is shared and loaded: torch eager's 2 OpenMP threads spin for ~90 ms per
# op there (measured: a tiny conv's forward+backward 90 ms on 2 threads, 0.2 ms on 1). The tests
# compare values, not speed, so eager runs on one thread.
torch.set_num_threads(1)
