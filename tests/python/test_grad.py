"""stax.grad: the seed's Example 5.1 (Table 5.1: saved {matmul}), gradients against the reference
interpreter and torch autograd, the memory budget, the interpreter path, backward's rules."""
import pytest

import stax
from helpers import ATOL, RTOL, example, random_inputs

np = pytest.importorskip("numpy")


@pytest.fixture(scope="module")
def example_5_1():
    return example("example_5_1_forward.stax")


def test_example_5_1_saves_matmul_as_table_5_1_says(cpu, example_5_1):
    cf = stax.grad(example_5_1, wrt=["primals_2"], compiler=cpu)
    assert cf.saved == ["matmul"]
    assert cf.saved_primals == ["primals_1"]
    assert cf.recomputed == []
    assert cf.saved_bytes == 8192 and cf.max_flow == 9011
    rows = {r["name"]: r for r in cf.partition_values}
    assert rows["matmul"]["capacity"] == 9011 and rows["matmul"]["saved"]
    assert rows["gelu"]["capacity"] == int(2 * 8192 * 1.1 ** 100)
    assert not rows["gelu"]["saved"]
    assert "max flow = min cut = 9011" in cf.partition_report
    assert cf.partition_dot.startswith("digraph")
    assert [n.name for n in cf.forward_graph.outputs] == ["sum_0", "matmul"]
    assert [p.name for p in cf.backward_graph.placeholders] == ["primals_1", "matmul", "tangents_1"]
    assert "[BW]" in cf.joint.print("listing52")
    assert cf.compiled_forward is not None and cf.compiled_backward is None


def test_example_5_1_cf_backward_matches_torch_autograd(cpu, example_5_1):
    torch = pytest.importorskip("torch")
    cf = stax.grad(example_5_1, wrt=["primals_2"], compiler=cpu)
    x, w = torch.randn(32, 64), torch.randn(64, 64) / 8
    r = cf(x, w)  # the seed's cf(x, W).backward()
    (loss,) = r.outputs
    assert r.saved_bytes == 8192 and len(r.saved_values) == 1
    (gw,) = r.backward()
    assert r.released and r.saved_bytes == 0
    assert cf.compiled_backward is not None and cf.stats["backward_compiles"] == 1
    wr = w.clone().requires_grad_(True)
    ref = torch.nn.functional.gelu(x @ wr).sum()
    ref.backward()
    torch.testing.assert_close(loss, ref.detach(), rtol=RTOL, atol=1e-3)
    torch.testing.assert_close(gw, wr.grad, rtol=RTOL, atol=ATOL)
    # And against the joint graph on the interpreter (the oracle).
    (ref_out,), (ref_gw,) = cf.reference(x, w)
    torch.testing.assert_close(gw, ref_gw, rtol=RTOL, atol=ATOL)


def test_compile_backward_with_the_forward(cpu, example_5_1):
    # compile_backward=True: both graphs compiled by stax.grad, as one job; the gradients are the
    # bits of a backward compiled on first use, and match the joint graph on the interpreter.
    torch = pytest.importorskip("torch")
    lazy = stax.grad(example_5_1, wrt=["primals_1", "primals_2"], compiler=cpu)
    now = stax.grad(example_5_1, wrt=["primals_1", "primals_2"], compiler=cpu,
                    compile_backward=True)
    assert lazy.compiled_backward is None and not lazy.stats["backward_with_forward"]
    assert now.compiled_backward is not None and now.stats["backward_with_forward"]
    assert now.stats["backward_compiles"] == 1
    x, w = torch.randn(32, 64), torch.randn(64, 64) / 8
    g_lazy, g_now = lazy(x, w).backward(), now(x, w).backward()
    assert now.stats["backward_compiles"] == 1
    _, ref = now.reference(x, w)
    for a, b, r in zip(g_lazy, g_now, ref):
        assert torch.equal(a, b)
        torch.testing.assert_close(b, r, rtol=RTOL, atol=ATOL)


def test_memory_budget(cpu, example_5_1):
    cf = stax.grad(example_5_1, wrt=["primals_2"], compiler=cpu, budget=8192)
    assert cf.saved == ["matmul"]
    assert cf.budget["budget"] == 8192 and cf.budget["outcome"] == "fits"
    assert cf.budget["chosen_bytes"] == 8192
    # matmul is never recomputed (U: not cheap), so no set fits 4096 bytes: the error says so.
    with pytest.raises(stax.Error) as e:
        stax.grad(example_5_1, wrt=["primals_2"], compiler=cpu, budget=4096)
    assert e.value.stage == "partition"
    assert "infeasible" in e.value.message and "8192" in e.value.message
    assert stax.grad(example_5_1, wrt=["primals_2"], compiler=cpu).budget is None


def test_interpreter_path_is_bitwise_the_reference(example_5_1):
    cf = stax.grad(example_5_1, wrt=["primals_1", "primals_2"], interpret=True)
    assert cf.interpreted and cf.compiled_forward is None
    x, w = random_inputs(example_5_1, seed=4)
    r = cf.forward(x, w)
    gx, gw = r.backward()
    (out,), (rx, rw) = cf.reference(x, w)
    assert r.outputs[0].tobytes() == out.tobytes()
    assert gx.tobytes() == rx.tobytes() and gw.tobytes() == rw.tobytes()


def test_backward_rules(cpu, example_5_1):
    cf = stax.grad(example_5_1, wrt=[example_5_1.placeholders[1]], compiler=cpu)
    assert cf.wrt == ["primals_2"]
    x, w = random_inputs(example_5_1, seed=8)
    r = cf(x, w)
    (g1,) = r.backward(retain_graph=True)
    (g2,) = r.backward(np.array(2.0, np.float32))  # an upstream gradient of 2
    np.testing.assert_allclose(g2, 2 * g1, rtol=1e-6, atol=1e-6)
    with pytest.raises(stax.Error) as e:
        r.backward()
    assert "second time" in str(e.value)
    (g0,) = cf(x, w).backward(None)  # None: zeros
    assert not g0.any()
    with pytest.raises(stax.Error):
        cf(x, w).backward(np.ones(3, np.float32))  # wrong shape
    with pytest.raises(stax.Error):
        cf(x, w).backward(np.float32(1), np.float32(1))  # one output, two gradients


def test_mlp_layer_gradients_match_torch(cpu):
    torch = pytest.importorskip("torch")
    g = example("mlp_layer.stax")
    cf = stax.grad(g, wrt=["x", "weight", "bias"], compiler=cpu)
    x, w, b = torch.randn(32, 64), torch.randn(64, 128) / 8, torch.randn(128)
    up = torch.randn(32, 128)
    r = cf(x, w, b)
    gx, gw, gb = r.backward(up)
    xs, ws, bs = (t.clone().requires_grad_(True) for t in (x, w, b))
    out = torch.nn.functional.gelu(xs @ ws + bs)
    out.backward(up)
    torch.testing.assert_close(r.outputs[0], out.detach(), rtol=RTOL, atol=ATOL)
    for got, want in ((gx, xs.grad), (gw, ws.grad), (gb, bs.grad)):
        torch.testing.assert_close(got, want, rtol=RTOL, atol=1e-4)


def test_transformer_block_gradients_match_the_interpreter(cpu):
    g = example("transformer_block.stax")
    wrt = [p.name for p in g.placeholders]
    cf = stax.grad(g, wrt=wrt, compiler=cpu)
    inputs = random_inputs(g, seed=9)
    r = cf(*inputs)
    grads = r.backward()
    outs, ref_grads = cf.reference(*inputs)
    for a, b in zip(r.outputs, outs):
        np.testing.assert_allclose(a, b, rtol=RTOL, atol=ATOL)
    assert len(grads) == len(wrt)
    for name, a, b in zip(wrt, grads, ref_grads):
        np.testing.assert_allclose(a, b, rtol=RTOL, atol=1e-4, err_msg=name)
    assert cf.stats["num_saved"] == len(cf.saved)


def test_grad_errors(cpu, example_5_1):
    with pytest.raises(stax.Error):
        stax.grad(example_5_1, wrt=["nope"], compiler=cpu)
    g = stax.Graph()
    i = g.placeholder("i", (4,), dtype="int64")
    g.output(g.call("sum.default", i))
    with pytest.raises(stax.Error):
        stax.grad(g, wrt="i", compiler=cpu)  # not floating
    with pytest.raises(stax.Error):
        stax.grad(example_5_1, wrt="primals_2", algorithm="magic", compiler=cpu)
