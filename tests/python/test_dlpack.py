"""Tensors through DLPack: round trips for every dtype, non-contiguous and 0-d tensors, zero
copies checked by data pointers, the documented copies, lifetimes, and the bad inputs."""
import gc

import pytest

import stax

np = pytest.importorskip("numpy")
torch = pytest.importorskip("torch")

STAX_DTYPES = ["float32", "float64", "float16", "bfloat16", "int64", "int32", "int8", "uint8", "bool",
               "complex64", "complex128", "int16", "uint16", "uint32", "uint64"]


def torch_tensor(dtype, shape, seed=0):
    g = torch.Generator().manual_seed(seed)
    t = getattr(torch, dtype)
    if dtype == "bool":
        return torch.randint(0, 2, shape, generator=g).bool()
    if t.is_floating_point:
        return torch.randn(shape, generator=g).to(t)
    if t.is_complex:
        return torch.randn(shape, generator=g, dtype=t)
    lo, hi = (0, 255) if dtype.startswith("uint") else (-100, 100)
    return torch.randint(lo, hi, shape, generator=g).to(t)


def ptr(x):
    if isinstance(x, torch.Tensor):
        return x.data_ptr()
    if isinstance(x, np.ndarray):
        return x.__array_interface__["data"][0]
    return x.data_ptr


@pytest.mark.parametrize("dtype", STAX_DTYPES)
@pytest.mark.parametrize("layout", ["contiguous", "transposed", "strided", "0-d", "empty"])
def test_torch_round_trip_without_copies(dtype, layout):
    base = torch_tensor(dtype, (6, 10))
    x = {"contiguous": base, "transposed": base.t(), "strided": base[1::2, ::3],
         "0-d": base[2, 3], "empty": base[:0]}[layout]
    s = stax.tensor(x)
    assert s.dtype == dtype and s.shape == tuple(x.shape)
    assert s.strides == tuple(x.stride()) or x.numel() == 0
    if x.numel() > 0:
        assert s.borrowed and s.data_ptr == ptr(x)  # zero-copy in
    back = torch.from_dlpack(s)
    assert back.dtype == x.dtype and back.shape == x.shape
    assert torch.equal(back, x)
    if x.numel() > 0:
        assert back.data_ptr() == x.data_ptr()  # and out: the same memory


@pytest.mark.parametrize("dtype", [d for d in STAX_DTYPES if d != "bfloat16"])
def test_numpy_round_trip_without_copies(dtype):
    x = torch_tensor(dtype, (5, 7), seed=1).numpy()
    for view in (x, x.T, x[::2, 1::3], x[4, 6, ...], np.asfortranarray(x)):
        s = stax.tensor(view)
        assert s.borrowed and s.data_ptr == ptr(view)
        assert s.strides == tuple(st // view.itemsize for st in view.strides)
        back = np.from_dlpack(s)
        assert back.dtype == view.dtype and ptr(back) == ptr(view)
        np.testing.assert_array_equal(back, view)
        np.testing.assert_array_equal(s.numpy(), view)


def test_documented_copies():
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    rev = x[::-1, ::-2]  # negative strides
    t, copied, reason, _ = stax._stax._import_info(rev)
    assert copied and "negative strides" in reason and not t.borrowed
    np.testing.assert_array_equal(t.numpy(), rev)
    raw = np.zeros(4 * 10 + 1, np.uint8)
    odd = raw[1:].view(np.float32)  # data not aligned to 4 bytes
    odd[:] = np.arange(10, dtype=np.float32)
    t, copied, reason, _ = stax._stax._import_info(odd)
    assert copied and "aligned" in reason
    np.testing.assert_array_equal(t.numpy(), np.arange(10, dtype=np.float32))
    ro = np.arange(6, dtype=np.int64)
    ro.flags.writeable = False
    t, copied, _, read_only = stax._stax._import_info(ro)
    assert not copied and read_only and t.data_ptr == ptr(ro)


def test_legacy_capsules_and_stax_tensors_pass_through():
    x = torch.arange(6, dtype=torch.float32)
    cap = torch.utils.dlpack.to_dlpack(x)
    s = stax.tensor(cap)
    assert s.data_ptr == x.data_ptr()
    with pytest.raises(stax.Error) as e:
        stax.tensor(cap)  # consumed
    assert "already consumed" in str(e.value)
    assert stax.tensor(s).data_ptr == s.data_ptr
    legacy = s.__dlpack__()  # no max_version: a legacy capsule
    assert torch.from_dlpack(legacy).data_ptr() == x.data_ptr()
    assert torch.from_dlpack(s.__dlpack__(max_version=(1, 0))).data_ptr() == x.data_ptr()
    copy = torch.from_dlpack(s.__dlpack__(max_version=(1, 0), copy=True))
    assert copy.data_ptr() != x.data_ptr() and torch.equal(copy, x)
    with pytest.raises(BufferError):
        s.__dlpack__(dl_device=(2, 0))
    assert s.__dlpack_device__() == (1, 0)


def test_memory_lives_as_long_as_any_view():
    x = np.arange(1000, dtype=np.float64)
    s = stax.tensor(x)
    addr = ptr(x)
    del x
    gc.collect()
    assert s.data_ptr == addr and s.numpy()[999] == 999.0  # the array is kept alive by s
    t = torch.from_dlpack(s)
    del s
    gc.collect()
    assert t[500].item() == 500.0 and t.data_ptr() == addr  # and by the torch view of it


def test_compiled_outputs_alias_inputs_without_copies(cpu):
    g = stax.Graph()
    x = g.placeholder("x", (64, 128))
    g.output([g.call("view.default", x, [128, 64]), g.call("relu.default", x)])
    f = cpu.compile(g)
    xt = torch.randn(64, 128)
    view, relu = f(xt)
    assert view.data_ptr() == xt.data_ptr()  # zero-copy in and out
    assert torch.equal(view, xt.view(128, 64)) and torch.equal(relu, xt.relu())
    xt[0, 0] = 123.0
    assert view[0, 0].item() == 123.0
    del xt
    gc.collect()
    assert view[0, 0].item() == 123.0  # the output holds the input's memory
    xn = np.ones((64, 128), np.float32)
    vn, _ = f(xn)
    assert ptr(vn) == ptr(xn)


def test_noncontiguous_inputs_to_a_compiled_graph(cpu):
    g = stax.Graph()
    x = g.placeholder("x", (64, 128))
    g.output(g.call("mul.Scalar", g.call("exp.default", x), 2.0))
    f = cpu.compile(g)
    big = torch.randn(128, 64)
    for x in (big.t(), torch.randn(64, 256)[:, ::2], torch.randn(64, 1).expand(64, 128)):
        got = f(x)
        assert torch.equal(got, stax.interpret(g, x))  # pointwise: bitwise the interpreter
        torch.testing.assert_close(got, torch.exp(x) * 2, rtol=1e-6, atol=0)


def test_zero_d_inputs_and_outputs(cpu):
    g = stax.Graph()
    a = g.placeholder("a", ())
    b = g.placeholder("b", (3,))
    g.output([g.call("mul.Tensor", a, b), g.call("sum.default", b)])
    f = cpu.compile(g)
    prod, total = f(torch.tensor(2.0), torch.tensor([1.0, 2.0, 3.0]))
    assert total.shape == () and total.item() == 6.0
    assert prod.tolist() == [2.0, 4.0, 6.0]
    prod, total = f(np.ones((), np.float32) * 2, np.ones(3, np.float32))
    assert total.shape == () and float(total) == 3.0
    prod, total = f(np.float32(3.0), np.ones(3, np.float32))  # a numpy scalar: copied
    assert prod.tolist() == [3.0, 3.0, 3.0]
    with pytest.raises(stax.Error) as e:
        f(2.0, np.ones(3, np.float32))
    assert "numpy.float32(2.0)" in str(e.value)


def test_unsupported_dtypes_are_errors():
    for x in (torch.zeros(3, dtype=torch.complex32),):  # int16 and uint16/32/64 are Stax dtypes
        with pytest.raises(stax.Error) as e:
            stax.tensor(x)
        assert e.value.stage == "input" and "not a Stax dtype" in e.value.message
    with pytest.raises(stax.Error) as e:
        stax.tensor([1.0, 2.0])
    assert "expected a tensor" in str(e.value)


class FakeCudaTensor:
    """A DLPack producer on cuda:0 that cannot copy to the host (what a CUDA tensor looks like
    to Stax on a machine without a driver)."""

    def __dlpack_device__(self):
        return (2, 0)

    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        raise BufferError("no CUDA driver to copy with")


def test_a_cuda_tensor_without_a_driver_is_an_error(cpu):
    with pytest.raises(stax.Error) as e:
        stax.tensor(FakeCudaTensor())
    assert "cuda:0" in e.value.message and "host copy" in e.value.message
    import ctypes.util
    try:
        ctypes.CDLL("libcuda.so.1")
    except OSError:
        assert "no CUDA driver (libcuda.so.1 not found)" in e.value.message
    f = cpu.compile(stax.Graph.parse(
        "graph(\n    %x shape=(3,) = placeholder[target=x]\n"
        "    %r shape=(3,) = call_function[target=tp.relu.default](args = (%x,))\n"
        "    return (r,)\n)\n"))
    with pytest.raises(stax.Error) as e:
        f(FakeCudaTensor())
    assert e.value.location == "input 'x'"


def test_a_freed_tensor_is_an_error():
    x = torch.randn(4, 4)
    x.untyped_storage().resize_(0)  # the storage freed under the tensor
    with pytest.raises((stax.Error, RuntimeError)) as e:
        stax.tensor(x)
    if isinstance(e.value, stax.Error):
        assert "no memory" in str(e.value) or "__dlpack__" in str(e.value)


def test_a_tensor_that_requires_grad_is_read_through_detach():
    w = torch.randn(3, 4, requires_grad=True)
    s = stax.tensor(w)
    assert s.borrowed and s.data_ptr == w.data_ptr()
