"""torch.compile(backend="stax") on int16 and uint64 tensors (docs/dtypes.md): results equal torch
eager's exactly, and stax.explain shows the graph ran in Stax (no eager split, no fallback)."""
import pytest

torch = pytest.importorskip("torch")

import stax  # noqa: E402


def _ran_in_stax(before):
    ex = stax.explain()
    assert len(ex.graphs) == before + 1
    g = ex.graphs[-1]
    assert g.fallback is None and g.num_eager_ops == 0 and g.partitions
    assert all(p.fallback is None for p in g.partitions)


def test_int16_arithmetic_wraps_as_eager():
    def f(a, b):
        s = a + b  # wraps at 16 bits
        return s * 3 - torch.bitwise_right_shift(a, 2), torch.maximum(a, b), s.sum(), (a // 7) % 5

    a = torch.tensor([30000, -32768, 7, -7, 100, 12345], dtype=torch.int16)
    b = torch.tensor([30000, -1, 1, 2, -3, -20000], dtype=torch.int16)
    before = len(stax.explain().graphs)
    got = torch.compile(f, backend="stax")(a, b)
    want = f(a, b)
    for g, w in zip(got, want):
        assert g.dtype == w.dtype and torch.equal(g, w), (g, w)
    _ran_in_stax(before)


def test_uint64_data_movement_as_eager():
    def f(x, y):
        m = torch.where(x == y, x, y)
        return torch.cat([m, x]).flip(0), x.to(torch.float64), x[1:3].clone(), x != 9

    x = torch.tensor([0, 9, 2 ** 63, 2 ** 64 - 1], dtype=torch.uint64)
    y = torch.tensor([1, 9, 2 ** 63, 5], dtype=torch.uint64)
    before = len(stax.explain().graphs)
    got = torch.compile(f, backend="stax")(x, y)
    want = f(x, y)
    for g, w in zip(got, want):
        assert g.dtype == w.dtype and torch.equal(g, w), (g, w)
    _ran_in_stax(before)
