"""torch.compile(backend="stax") and stax.compile (issue 25 items 1-3, 5, Bad input): the
registered backend, inference and training against eager, the seed's Example 5.1 (Table 5.1:
saved {matmul}), stax.explain, the split where Stax lacks an op, and the bad-input list."""
import logging
import os

import pytest

torch = pytest.importorskip("torch")
import torch.nn.functional as F  # noqa: E402

import stax  # noqa: E402

RTOL, ATOL = 1e-4, 1e-4


def _example_5_1(x, w):
    return F.gelu(x @ w).sum()


def test_backend_is_registered_by_name():
    from importlib.metadata import entry_points

    from torch._dynamo import list_backends
    assert "stax" in list_backends()
    # The torch_dynamo_backends entry point (the wheel's, from pyproject.toml; the build tree
    # writes the same one), so that torch finds the backend without `import stax`.
    (ep,) = [e for e in entry_points(group="torch_dynamo_backends") if e.name == "stax"]
    assert ep.value == "stax.dynamo:backend" and ep.load() is stax.dynamo.backend
    torch._dynamo.reset()
    before = len(stax.explain().graphs)
    f = torch.compile(lambda a, b: torch.relu(a) * b + 1, backend="stax")
    a, b = torch.randn(5, 7), torch.randn(5, 7)
    torch.testing.assert_close(f(a, b), torch.relu(a) * b + 1, rtol=0, atol=0)  # pointwise
    ex = stax.explain()
    assert len(ex.graphs) == before + 1 and ex.graphs[-1].partitions[0].mode == "inference"


def test_example_5_1_saves_matmul_as_table_5_1_says():
    cf = stax.compile(_example_5_1)
    x = torch.randn(32, 64)
    w = (torch.randn(64, 64) / 8).requires_grad_()
    cf(x, w).backward()  # the seed's cf(x, W).backward()
    wr = w.detach().clone().requires_grad_()
    _example_5_1(x, wr).backward()
    torch.testing.assert_close(w.grad, wr.grad, rtol=RTOL, atol=ATOL)
    (p,) = stax.explain(cf).partitions
    assert p.mode == "training"
    assert p.ops["aten.mm.default"] == 1
    # Table 5.1: the matmul (aten.mm, named "mm" in the aten graph) is the only value saved;
    # x is held as a saved primal, gelu is recomputed by nobody (the backward needs only mm).
    assert p.saved == ["mm"] and p.saved_bytes == 32 * 64 * 4
    assert len(p.saved_primals) == 1 and p.recomputed == []
    assert "saved for backward: ['mm'] (8192 bytes)" in str(stax.explain(cf))


def test_training_and_inference_of_one_function_and_retain_graph():
    lin = torch.nn.Linear(6, 3)
    cm = stax.compile(lin)
    x = torch.randn(4, 6)
    with torch.no_grad():
        torch.testing.assert_close(cm(x), lin(x), rtol=RTOL, atol=ATOL)
    out = cm(x)
    assert out.requires_grad
    out.sum().backward(retain_graph=True)
    g1 = lin.weight.grad.clone()
    out.sum().backward()  # a second backward through the same graph accumulates
    torch.testing.assert_close(lin.weight.grad, 2 * g1)
    lin.zero_grad()
    lin(x).sum().backward()
    torch.testing.assert_close(g1, lin.weight.grad, rtol=RTOL, atol=ATOL)
    modes = {p.mode for p in stax.explain(cm).partitions}
    assert modes == {"inference", "training"}


def test_an_op_stax_lacks_splits_the_graph_with_a_log_line(caplog):
    # aten._upsample_bicubic2d_aa (antialiased bicubic resampling) has no Stax schema: the
    # graph is split there; the Stax partitions before and after it train through stax.grad and
    # autograd flows through torch's own op between them.
    def f(x, w, a):
        h = torch.relu(x @ w) * a
        s = torch.nn.functional.interpolate(h[None, None], size=(3, 2), mode="bicubic",
                                            antialias=True)
        return torch.tanh(s).sum()

    cf = stax.compile(f)
    x = torch.randn(4, 5)
    w = torch.randn(5, 3, requires_grad=True)
    a = torch.randn(4, 3, requires_grad=True)
    with caplog.at_level(logging.WARNING, logger="stax.dynamo"):
        out = cf(x, w, a)
    assert any("aten._upsample_bicubic2d_aa.default x1" in r.getMessage()
               and "split" in r.getMessage() for r in caplog.records)
    out.backward()
    w2, a2 = w.detach().clone().requires_grad_(), a.detach().clone().requires_grad_()
    ref = f(x, w2, a2)
    ref.backward()
    torch.testing.assert_close(out, ref, rtol=RTOL, atol=ATOL)
    torch.testing.assert_close(w.grad, w2.grad, rtol=RTOL, atol=ATOL)
    torch.testing.assert_close(a.grad, a2.grad, rtol=RTOL, atol=ATOL)
    ex = stax.explain(cf)
    assert ex.eager_ops == {"aten._upsample_bicubic2d_aa.default": 1}
    assert len(ex.partitions) == 2 and all(p.mode == "training" for p in ex.partitions)
    assert "unknown op '_upsample_bicubic2d_aa.default'" in str(ex)
    assert not ex.fallbacks


def test_dropout_is_compiled_with_a_new_mask_per_call_seeded_by_torch():
    # aten.native_dropout is a Stax op (Philox, torch's semantics: docs/core_aten.md): the mask
    # is Stax's, not eager's, so the test checks what torch promises of dropout: about p of the
    # elements zeroed, the rest scaled by 1 / (1 - p), the gradient through the same mask, a new
    # mask per call, the same one after the same torch.manual_seed, identity in eval mode.
    p = 0.5
    lin = torch.nn.Linear(16, 32)
    cm = stax.compile(lambda x: F.dropout(lin(x), p, training=True))
    x = torch.randn(64, 16)
    up = torch.randn(64, 32)
    torch.manual_seed(7)
    out = cm(x)
    (out * up).sum().backward()
    g = lin.weight.grad.clone()
    lin.zero_grad()
    h = lin(x)
    kept = out != 0
    assert 0.4 < kept.float().mean().item() < 0.6
    torch.testing.assert_close(out, torch.where(kept, h / (1 - p), 0), rtol=RTOL, atol=ATOL)
    (h * kept / (1 - p) * up).sum().backward()  # eager's gradient through Stax's mask
    torch.testing.assert_close(g, lin.weight.grad, rtol=RTOL, atol=ATOL)
    again = cm(x)
    torch.manual_seed(7)
    same = cm(x)
    assert not torch.equal(again != 0, kept), "the mask did not change between calls"
    torch.testing.assert_close(same, out, rtol=0, atol=0)
    with torch.no_grad():  # the inference partition draws too
        kept_a, kept_b = cm(x) != 0, cm(x) != 0
    assert 0.4 < kept_a.float().mean().item() < 0.6 and not torch.equal(kept_a, kept_b)
    ex = stax.explain(cm)
    assert not ex.eager_ops and not ex.fallbacks, str(ex)
    assert {pt.mode for pt in ex.partitions} == {"training", "inference"}
    assert all(pt.ops.get("aten.native_dropout.default") == 1 for pt in ex.partitions), str(ex)

    model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.Dropout(p)).eval()
    with torch.no_grad():
        torch.testing.assert_close(stax.compile(model)(x), model(x), rtol=RTOL, atol=ATOL)


def test_in_place_updates_of_inputs_are_written_back():
    def f(x, buf, count):
        buf.mul_(0.9).add_(x.mean(0), alpha=0.1)  # a running average, as batch norm keeps
        count.add_(1)
        return x * 2

    cf = stax.compile(f)
    x = torch.randn(5, 3)
    buf, count = torch.ones(3), torch.zeros((), dtype=torch.int64)
    rbuf, rcount = buf.clone(), count.clone()
    for _ in range(2):
        torch.testing.assert_close(cf(x, buf, count), x * 2)
        f(x, rbuf, rcount)
    torch.testing.assert_close(buf, rbuf, rtol=1e-6, atol=1e-6)
    assert count.item() == 2 == rcount.item()
    (g,) = stax.explain(cf).graphs
    # (indices of the Dynamo graph's inputs, which Dynamo orders by first use: buf, x, count)
    assert g.mutations == [0, 2] and "inputs written back (mutations): [0, 2]" in str(g)
    assert g.partitions and not g.eager_ops


def test_a_partition_stax_cannot_compile_runs_eager_or_raises(caplog):
    bad = {"devices": {"cpu": {"backend": "no_such_plugin"}}}
    cf = stax.compile(lambda a: torch.tanh(a) + 1, config=bad)
    x = torch.randn(4)
    with caplog.at_level(logging.WARNING, logger="stax.dynamo"):
        torch.testing.assert_close(cf(x), torch.tanh(x) + 1)
    assert any("runs in torch eager" in r.getMessage() for r in caplog.records)
    ((where, why),) = stax.explain(cf).fallbacks
    assert "no_such_plugin" in why
    torch._dynamo.reset()
    strict = stax.compile(lambda a: torch.tanh(a) + 1, config=bad, fallback="error")
    with pytest.raises(stax.Error, match="no_such_plugin"):
        strict(x)


def test_options():
    with pytest.raises(ValueError, match="unknown option"):
        stax.compile(torch.relu, bogus=1)
    with pytest.raises(ValueError, match="fallback"):
        stax.compile(torch.relu, fallback="maybe")
    # A config as a dict, and a memory budget for the partitioner.
    cf = stax.compile(_example_5_1, config={"devices": {"cpu": {"backend": "cpu_cpp"}}},
                      budget=1 << 20)
    w = torch.randn(64, 64, requires_grad=True)
    cf(torch.randn(32, 64), w).backward()
    assert stax.explain(cf).saved == ["mm"]
    f = torch.compile(torch.sin, backend="stax", options={"config": "cpu"})
    x = torch.randn(3)
    torch.testing.assert_close(f(x), torch.sin(x), rtol=RTOL, atol=1e-6)


def _process_threads():
    return len(os.listdir("/proc/self/task"))


def test_kernels_run_on_torchs_openmp_team_not_a_second_pool():
    """pool="torch" (the default): cpu_cpp's parallel loops run on torch's own OpenMP team, so
    compiling and running adds no thread to the process; pool="stax" starts Stax's own worker."""
    import importlib
    team = importlib.import_module("stax.dynamo.backend").torch_openmp_runtime()
    if team is None:
        pytest.skip("torch's parallel backend is not OpenMP here")
    assert os.path.basename(team).startswith(("libgomp", "libomp", "libiomp")), team
    with pytest.raises(ValueError, match="pool"):
        stax.compile(torch.relu, pool="mine")
    saved = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        x = torch.randn(512, 1024)
        ref = torch.tanh(x) * 2 + x.sum(-1, keepdim=True)
        torch.testing.assert_close(torch.tanh(x) * 2 + x.sum(-1, keepdim=True), ref)  # team up
        cfg = {"devices": {"cpu": {"backend": "cpu_cpp", "options": {"threads": 2}}},
               "cache": False}
        added = {}
        for pool in ("torch", "stax"):
            before = _process_threads()
            f = stax.compile(lambda a: torch.tanh(a) * 2 + a.sum(-1, keepdim=True), config=cfg,
                             pool=pool)
            torch.testing.assert_close(f(x), ref, rtol=RTOL, atol=1e-3)
            added[pool] = _process_threads() - before
        assert added == {"torch": 0, "stax": 1}, added
    finally:
        torch.set_num_threads(saved)


def test_the_first_backward_runs_its_kernels_on_the_calling_thread():
    """The first backward compiles the backward graph on run_interruptible's helper thread (so
    that Ctrl-C cancels it) but runs its kernels on the calling thread, as every later backward
    does: run on the helper, a parallel loop opened a second OpenMP team (new OS threads, as wide
    as libgomp's default, not torch.set_num_threads()) next to torch's. Checked through the
    calling thread's CPU time: it does the first backward's arithmetic (~0.8 G multiply-adds)
    as it does the second's, where before it only waited."""
    import time

    def f(x, w1, w2):
        return (torch.tanh(x @ w1) @ w2).sum()

    torch.manual_seed(0)
    x = torch.randn(256, 1024)
    w1 = (torch.randn(1024, 1024) / 32).requires_grad_()
    w2 = (torch.randn(1024, 1024) / 32).requires_grad_()
    cf = stax.compile(f)
    cpu = []
    for _ in range(2):
        w1.grad = w2.grad = None
        out = cf(x, w1, w2)
        t0 = time.thread_time()
        out.backward()
        cpu.append(time.thread_time() - t0)
    r1, r2 = w1.detach().requires_grad_(), w2.detach().requires_grad_()
    f(x, r1, r2).backward()
    torch.testing.assert_close(w1.grad, r1.grad, rtol=1e-3, atol=1e-3)
    torch.testing.assert_close(w2.grad, r2.grad, rtol=1e-3, atol=1e-3)
    assert stax.explain(cf).partitions[0].mode == "training"
    # set_num_threads(1) (conftest): the kernels run on the calling thread alone, so its CPU
    # time is the backward's. Before the fix the first backward's was ~0 (it waited).
    assert cpu[0] > 0.5 * cpu[1], cpu


def test_explain_requires_a_compiled_function():
    with pytest.raises(TypeError, match="stax.compile"):
        stax.explain(torch.relu)


# ---- Bad input -----------------------------------------------------------------------------

def test_non_contiguous_and_channels_last_inputs_are_read_as_they_are():
    # Documented: Stax's placeholders are row-major; DLPack hands the strided memory over
    # without a copy and the compiled graph copies it into that layout inside the run.
    conv = torch.nn.Conv2d(3, 4, 3, padding=1)
    cm = stax.compile(conv)
    x = torch.randn(2, 3, 5, 5).to(memory_format=torch.channels_last)
    with torch.no_grad():
        torch.testing.assert_close(cm(x), conv(x), rtol=RTOL, atol=ATOL)
    cf = stax.compile(lambda a, b: a @ b + 1)
    a = torch.randn(6, 4).t()  # transposed
    b = torch.randn(12, 3)[::2]  # strided rows
    torch.testing.assert_close(cf(a, b), a @ b + 1, rtol=RTOL, atol=ATOL)


def test_mixed_dtypes_promote_as_torch_does():
    cf = stax.compile(lambda a, b, i: a * b + i)
    a, b = torch.randn(4), torch.randn(4, dtype=torch.float64)
    i = torch.arange(4)
    out = cf(a, b, i)
    assert out.dtype == torch.float64
    torch.testing.assert_close(out, a * b + i)


def test_integer_inputs_beside_inputs_that_require_grad():
    # torch itself refuses requires_grad on an integer tensor; an integer input next to
    # trainable ones is differentiated only with respect to the floating ones.
    with pytest.raises(RuntimeError, match="floating point"):
        torch.arange(3).requires_grad_()
    emb = torch.nn.Embedding(10, 4)
    cm = stax.compile(emb)
    idx = torch.tensor([[1, 2], [3, 9]])
    cm(idx).pow(2).sum().backward()
    g = emb.weight.grad.clone()
    emb.zero_grad()
    emb(idx).pow(2).sum().backward()
    torch.testing.assert_close(g, emb.weight.grad, rtol=RTOL, atol=ATOL)


def test_wrong_device_falls_back_to_eager_or_raises():
    # Tensors Stax's CPU configs cannot read (here: the meta device) run in torch eager, with
    # a log line and a fallback in explain(); fallback="error" raises stax.Error instead.
    cf = stax.compile(lambda a: a * 2)
    out = cf(torch.empty(3, 4, device="meta"))
    assert out.device.type == "meta" and out.shape == (3, 4)
    (where, why), = stax.explain(cf).fallbacks
    assert "meta" in why
    strict = stax.compile(lambda a: a * 2, fallback="error")
    with pytest.raises(Exception, match="inputs on device"):
        strict(torch.empty(3, device="meta"))


def test_an_exception_inside_the_compiled_function_propagates():
    def f(x):
        y = torch.relu(x)
        if y.sum() > 0:  # data-dependent: Dynamo breaks the graph, Python raises
            raise ValueError("positive input")
        return y

    cf = stax.compile(f)
    with pytest.raises(ValueError, match="positive input"):
        cf(torch.ones(3))
    torch.testing.assert_close(cf(-torch.ones(3)), torch.zeros(3))


def test_an_effectful_check_runs_in_stax_and_raises_torchs_message():
    # torch 2.x exports _linalg_check_errors wrapped in with_effects (an effect token in and
    # out); the backend unwraps it, and Stax's own check raises torch's message.
    torch._dynamo.reset()
    before = len(stax.explain().graphs)
    inv = torch.compile(torch.linalg.inv, backend="stax")
    x = torch.randn(4, 4, dtype=torch.float64) + 4 * torch.eye(4, dtype=torch.float64)
    torch.testing.assert_close(inv(x), torch.linalg.inv(x), rtol=1e-12, atol=1e-12)
    (g,) = stax.explain().graphs[before:]
    assert g.fallback is None and not g.eager_ops and len(g.partitions) == 1
    singular = torch.zeros(2, 3, 3, dtype=torch.float64)
    singular[0] = torch.eye(3, dtype=torch.float64)
    with pytest.raises(stax.Error, match=r"linalg\.inv: \(Batch element 1\): The diagonal "
                                         r"element 1 is zero, the inversion could not be "
                                         r"completed because the input matrix is singular"):
        inv(singular)


def test_one_compiled_module_from_several_threads():
    import threading
    lin = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.GELU(), torch.nn.Linear(32, 4))
    cm = stax.compile(lin)
    xs = [torch.randn(8, 16) for _ in range(4)]
    with torch.no_grad():
        cm(xs[0])  # Dynamo compiles once; the threads then share the compiled graph
        want = [lin(x) for x in xs]
    got, errors = [None] * len(xs), []

    def work(i):
        try:
            with torch.no_grad():
                for _ in range(20):
                    got[i] = cm(xs[i])
        except Exception as e:  # noqa: BLE001
            errors.append(e)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(len(xs))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    for g, w in zip(got, want):
        torch.testing.assert_close(g, w, rtol=RTOL, atol=ATOL)
    assert sum(p.calls for p in stax.explain(cm).partitions) == 1 + 20 * len(xs)
