"""Helpers of the Python package's tests: paths, reference comparisons, random inputs."""
import os

import stax

REPO = os.environ.get("STAX_SOURCE_DIR") or os.path.dirname(
    os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
EXAMPLES = os.path.join(REPO, "examples")

# core/driver/compiled_function.h: compiled vs interpreter for reductions and matmuls that sum in
# another order (|a - b| <= ATOL + RTOL |b|); pointwise-only results are bitwise equal.
RTOL = 1e-4
ATOL = 1e-5


def example(name):
    return stax.Graph.load(os.path.join(EXAMPLES, name))


def random_inputs(graph, seed=0):
    """numpy arrays for the graph's placeholders: normal floats, small non-negative ints."""
    import numpy as np
    rng = np.random.default_rng(seed)
    out = []
    for p in graph.placeholders:
        if p.dtype.startswith(("float", "bfloat")):
            out.append(rng.standard_normal(p.shape).astype(p.dtype if p.dtype != "bfloat16"
                                                           else "float32"))
        elif p.dtype == "bool":
            out.append(rng.integers(0, 2, p.shape).astype(bool))
        else:
            out.append(rng.integers(0, 10, p.shape).astype(p.dtype))
    return out


def as_tuple(x):
    return x if isinstance(x, tuple) else (x,)
