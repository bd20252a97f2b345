"""Threads: one CompiledGraph called from many threads at once; compiles from several threads on
one Compiler; the GIL released while Stax compiles and runs (other Python threads progress)."""
import threading
import time

import pytest

import stax
from helpers import ATOL, RTOL, example, random_inputs

np = pytest.importorskip("numpy")


def run_threads(n, fn):
    errors = []

    def body(i):
        try:
            fn(i)
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=body, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]


def test_one_compiled_graph_many_threads(cpu):
    g = example("layer_norm.stax")
    f = cpu.compile(g)
    inputs = [random_inputs(g, seed=s) for s in range(8)]
    want = [stax.interpret(g, *i) for i in inputs]
    results = [None] * 8

    def work(i):
        for _ in range(20):
            out = f(*inputs[i])
            np.testing.assert_allclose(out, want[i], rtol=RTOL, atol=ATOL)
        results[i] = out

    run_threads(8, work)
    for i in range(8):  # every thread's last output is its own, intact
        np.testing.assert_allclose(results[i], want[i], rtol=RTOL, atol=ATOL)


def test_compiles_from_many_threads_on_one_compiler():
    c = stax.Compiler("cpu")
    names = ["example_1_1.stax", "mlp_layer.stax", "softmax.stax", "layer_norm.stax"]
    compiled = {}

    def work(i):
        g = example(names[i % len(names)])
        f = c.compile(g)
        inputs = random_inputs(g, seed=i)
        got = f(*inputs)
        want = stax.interpret(g, *inputs)
        for a, b in zip(got if isinstance(got, tuple) else (got,),
                        want if isinstance(want, tuple) else (want,)):
            np.testing.assert_allclose(a, b, rtol=RTOL, atol=ATOL)
        compiled[i] = f

    run_threads(8, work)
    assert len(compiled) == 8


def test_grad_from_many_threads(cpu):
    g = example("example_5_1_forward.stax")
    cf = stax.grad(g, wrt=["primals_1", "primals_2"], compiler=cpu)

    def work(i):
        x, w = random_inputs(g, seed=10 + i)
        r = cf(x, w)
        gx, gw = r.backward()
        (_,), (rx, rw) = cf.reference(x, w)
        np.testing.assert_allclose(gx, rx, rtol=RTOL, atol=ATOL)
        np.testing.assert_allclose(gw, rw, rtol=RTOL, atol=ATOL)

    run_threads(6, work)
    assert cf.stats["backward_compiles"] == 1  # compiled once, by whichever came first


class Counter(threading.Thread):
    """Counts in pure Python: it advances only while no thread holds the GIL."""

    def __init__(self):
        super().__init__(daemon=True)
        self.count = 0
        self.stop = False

    def run(self):
        while not self.stop:
            self.count += 1


def share_of_progress(fn):
    """How fast the counting thread advanced while fn() ran, relative to its speed while the main
    thread sleeps (GIL released): ~1 when fn() releases the GIL; when fn() holds it for its whole
    duration the counter only gets the switch interval (5 ms) around it."""
    c = Counter()
    c.start()
    time.sleep(0.05)
    n0, t0 = c.count, time.perf_counter()
    time.sleep(0.2)
    idle_rate = (c.count - n0) / (time.perf_counter() - t0)
    n1, t1 = c.count, time.perf_counter()
    fn()
    busy_rate = (c.count - n1) / (time.perf_counter() - t1)
    elapsed = time.perf_counter() - t1
    c.stop = True
    c.join()
    return busy_rate / idle_rate, elapsed


def test_the_gil_is_released_while_compiling_and_running():
    c = stax.Compiler({"devices": {"cpu": {"backend": "cpu_cpp", "options": {"threads": 1}}},
                       "cache": False})
    g = stax.Graph()
    xs = [g.placeholder(f"x{i}", (8, 16 + i)) for i in range(15)]
    g.output([g.call("sum.dim_IntList", g.call("tanh", x), [-1]) for x in xs])
    share, seconds = share_of_progress(lambda: c.compile(g))  # 15 kernels through Clang
    assert seconds > 0.1 and share > 0.2, (share, seconds)
    big = stax.Graph()
    x = big.placeholder("x", (4096, 4096))
    big.output(big.call("sum.dim_IntList", big.call("sin", big.call("exp", big.call("tanh", x))),
                        [-1]))
    f = c.compile(big)
    a = np.full((4096, 4096), 0.5, np.float32)
    share, seconds = share_of_progress(lambda: f(a))  # one call of 16 M elements, 1 thread
    assert seconds > 0.05 and share > 0.2, (share, seconds)
