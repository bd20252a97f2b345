"""Stax's dtypes against torch's: the whole promotion table (torch.promote_types, every pair of
the 15 dtypes, torch's refusals included) and the int16 / uint16 / uint32 / uint64 tensors
through DLPack both ways at their extreme values (docs/dtypes.md)."""
import pytest

import stax

torch = pytest.importorskip("torch")

NAMES = ["float32", "float64", "float16", "bfloat16", "int64", "int32", "int8", "uint8", "bool",
         "complex64", "complex128", "int16", "uint16", "uint32", "uint64"]


def test_every_name_is_a_stax_dtype():
    for n in NAMES:
        assert stax.tensor(torch.zeros(2, dtype=getattr(torch, n))).dtype == n


def test_promotion_table_is_torchs():
    by_value = {getattr(stax, n): n for n in NAMES}
    mismatches = []
    for a in NAMES:
        for b in NAMES:
            try:
                want = str(torch.promote_types(getattr(torch, a), getattr(torch, b)))[6:]
            except RuntimeError as e:
                want = "error: " + str(e).split(" attempted")[0]
            try:
                got = by_value[stax.promote_types(getattr(stax, a), getattr(stax, b))]
            except ValueError as e:
                got = "error: " + str(e).split(" attempted")[0]
            if got != want:
                mismatches.append((a, b, got, want))
    assert mismatches == []


@pytest.mark.parametrize("name,values", [
    ("int16", [-32768, -1, 0, 32767]),
    ("uint16", [0, 1, 40000, 65535]),
    ("uint32", [0, 7, 3000000000, 4294967295]),
    ("uint64", [0, 9, 2 ** 63, 2 ** 64 - 1]),
])
def test_extreme_values_round_trip_through_dlpack(name, values):
    t = torch.tensor(values, dtype=getattr(torch, name))
    s = stax.tensor(t)
    assert s.dtype == name and s.data_ptr == t.data_ptr()
    back = torch.from_dlpack(s)
    assert back.dtype == t.dtype and torch.equal(back, t)
    g = stax.Graph()
    x = g.placeholder("x", (4,), dtype=name)
    g.output([g.call("clone", x)])
    out = stax.interpret(g, s)
    assert torch.equal(torch.from_dlpack(out), t)
