"""stax.Compiler: every example compiled and run, compared with the reference interpreter and
with torch; the dumps as attributes; configs by name, path and dict; plugins and the cache."""
import os
import shutil
import subprocess

import pytest

import stax
from helpers import ATOL, EXAMPLES, RTOL, as_tuple, example, random_inputs

np = pytest.importorskip("numpy")

EXAMPLE_FILES = sorted(f for f in os.listdir(EXAMPLES)
                       if f.endswith(".stax") and f != "example_5_1_joint.stax")


@pytest.mark.parametrize("name", EXAMPLE_FILES)
def test_example_matches_the_interpreter(cpu, name):
    g = example(name)
    f = cpu.compile(g)
    inputs = random_inputs(g, seed=1)
    got = as_tuple(f(*inputs))
    want = as_tuple(stax.interpret(g, *inputs))
    assert len(got) == len(want) == len(g.outputs)
    for a, b, node in zip(got, want, g.outputs):
        assert isinstance(a, np.ndarray)
        assert a.shape == node.shape and str(a.dtype) == node.dtype
        np.testing.assert_allclose(a, b, rtol=RTOL, atol=ATOL, err_msg=f"{name} {node.name}")


def test_pointwise_results_are_bitwise_the_interpreters(cpu):
    g = stax.Graph()
    x = g.placeholder("x", (64, 128))
    y = g.placeholder("y", (64, 128))
    g.output(g.call("mul.Tensor", g.call("exp", g.call("relu", g.call("sub.Tensor", x, y))), y))
    f = cpu.compile(g)
    a, b = random_inputs(g, seed=3)
    got, want = f(a, b), stax.interpret(g, a, b)
    assert got.tobytes() == want.tobytes()


def test_example_1_1_matches_torch(cpu):
    torch = pytest.importorskip("torch")
    f = cpu.compile(example("example_1_1.stax"))
    x, y = torch.randn(64, 128), torch.randn(64, 128)
    out = f(x, y)
    assert isinstance(out, torch.Tensor) and out.shape == (64,)
    torch.testing.assert_close(out, ((x + y).relu() * 2).sum(-1), rtol=RTOL, atol=ATOL)


def test_mlp_layer_and_softmax_match_torch(cpu):
    torch = pytest.importorskip("torch")
    F = torch.nn.functional
    x, w, b = torch.randn(32, 64), torch.randn(64, 128) / 8, torch.randn(128)
    out = cpu.compile(example("mlp_layer.stax"))(x, w, b)
    torch.testing.assert_close(out, F.gelu(x @ w + b), rtol=RTOL, atol=ATOL)
    s = torch.randn(8, 32)
    soft, manual = cpu.compile(example("softmax.stax"))(s)
    torch.testing.assert_close(soft, torch.softmax(s, -1), rtol=RTOL, atol=ATOL)
    torch.testing.assert_close(manual, torch.softmax(s, -1), rtol=RTOL, atol=ATOL)
    x, wt, bias = torch.randn(16, 64), torch.randn(64), torch.randn(64)
    ln = cpu.compile(example("layer_norm.stax"))(x, wt, bias)
    torch.testing.assert_close(ln, F.layer_norm(x, (64,), wt, bias, 1e-5), rtol=RTOL, atol=ATOL)


def test_dumps_are_attributes(cpu):
    f = cpu.compile(example("example_1_1.stax"))
    assert f.backend == "cpu_cpp"
    assert f.num_kernels == len(f.kernels) >= 1
    k = f.kernels[0]
    assert k.name == "kernel0" and k.buffers.startswith("buf")
    assert k.name in k.body and len(k.source) >= len(k.body)
    assert "ComputedBuffer" in f.loop_ir
    assert "kernel0" in f.schedule
    assert f.schedule_dot.startswith("digraph")
    assert f.input_names == ["primals_1", "primals_2"]
    assert set(f.stats) >= {"lower_ms", "compile_ms", "total_ms", "kernels_compiled"}
    assert f.summary.startswith("kernels: ")
    assert "relu" in str(f.graph)
    outs, stats = f.run([np.ones((64, 128), np.float32)] * 2, with_stats=True)
    assert isinstance(outs[0], stax.Tensor) and outs[0].shape == (64,)
    assert np.all(outs[0].numpy() == 512.0)
    assert stats["launches"] == f.num_kernels


def test_outputs_follow_the_inputs_framework(cpu):
    f = cpu.compile(example("example_1_1.stax"))
    a = np.ones((64, 128), np.float32)
    assert isinstance(f(a, a), np.ndarray)
    s = stax.tensor(a)
    assert isinstance(f(s, s), stax.Tensor)
    torch = pytest.importorskip("torch")
    t = torch.ones(64, 128)
    assert isinstance(f(a, t), torch.Tensor)  # torch wins over numpy


def test_configs_by_name_path_and_dict(repo, tmp_path):
    g = example("example_1_1.stax")
    a = np.full((64, 128), 0.5, np.float32)
    want = stax.interpret(g, a, a)
    by_path = stax.Compiler(os.path.join(repo, "configs", "cpu.yaml"))
    by_dict = stax.Compiler({"devices": {"cpu": {"backend": "cpu_cpp", "options": {"threads": 1}}},
                             "cache": False})
    assert by_dict.cache_dir is None
    for c in (by_path, by_dict):
        np.testing.assert_array_equal(c.compile(g)(a, a), want)
    assert "cpu" in stax.shipped_configs() and "cuda_emulated" in stax.shipped_configs()
    assert os.path.isdir(stax.configs_dir())
    assert stax.plugin_dir() and os.path.isdir(stax.plugin_dir())


def test_compiler_options(repo):
    g = example("softmax.stax")
    unfused = stax.Compiler("cpu", fuse=False).compile(g)
    fused = stax.Compiler("cpu").compile(g)
    assert unfused.num_kernels > fused.num_kernels
    x = np.random.default_rng(0).standard_normal((8, 32)).astype(np.float32)
    np.testing.assert_allclose(unfused(x)[0], fused(x)[0], rtol=RTOL, atol=ATOL)


def test_dump_dir_writes_the_stages(tmp_path):
    c = stax.Compiler({"devices": {"cpu": {"backend": "cpu_cpp"}},
                       "dump": {"dir": str(tmp_path), "stages": ["loop_ir", "kernels"]}},
                      name="ex11")
    c.compile(example("example_1_1.stax"))
    assert sorted(os.listdir(tmp_path)) == ["ex11.kernels.txt", "ex11.loop_ir.txt"]


def test_cuda_emulated_runs_the_cuda_kernels():
    if not any(p["name"] == "cuda_nvrtc" and p["error"] is None for p in stax.plugins("cuda_emulated")):
        pytest.skip("cuda_nvrtc plugin not built (no CUDA toolkit)")
    g = example("example_1_1.stax")
    f = stax.Compiler("cuda_emulated").compile(g)
    assert f.backend == "cuda_nvrtc"
    assert "__global__" in f.kernels[0].source
    a, b = random_inputs(g, seed=5)
    np.testing.assert_allclose(f(a, b), stax.interpret(g, a, b), rtol=RTOL, atol=ATOL)


def _triton_available():
    py = shutil.which("python3")
    return py and subprocess.run([py, "-c", "import triton"], capture_output=True).returncode == 0


def test_cuda_triton_interpret_runs_the_triton_kernels():
    if not any(p["name"] == "cuda_triton" and p["error"] is None
               for p in stax.plugins("cuda_triton_interpret")):
        pytest.skip("cuda_triton plugin not built")
    if not _triton_available():
        pytest.skip("python3 has no triton package")
    g = stax.Graph()
    x = g.placeholder("x", (4, 8))
    g.output(g.call("mul.Scalar", g.call("relu", x), 3))
    f = stax.Compiler("cuda_triton_interpret").compile(g)
    assert "@triton.jit" in f.kernels[0].source
    a = random_inputs(g, seed=6)[0]
    np.testing.assert_array_equal(f(a), stax.interpret(g, a))


def test_plugins_lists_the_three_backends():
    found = {p["name"]: p for p in stax.plugins("cpu")}
    cpu = found["cpu_cpp"]
    assert cpu["error"] is None and cpu["device_kind"] == "cpu"
    assert cpu["configured_for"] == ["cpu"]
    assert cpu["thresholds"]["op_limit"] > 0
    assert "mm" in " ".join(cpu["extern_kernels"])
    assert os.path.dirname(cpu["path"]) == os.path.normpath(stax.plugin_dir())


def test_cache_dir_stats_and_clear(tmp_path):
    cfg = {"devices": {"cpu": {"backend": "cpu_cpp"}}, "cache_dir": str(tmp_path / "kc")}
    # STAX_CACHE_DIR (set by conftest) overrides cache_dir: the session's directory is used.
    d = stax.cache.dir(cfg)
    assert d == os.environ["STAX_CACHE_DIR"]
    stax.Compiler(cfg).compile(example("layer_norm.stax"))
    st = stax.cache.stats(cfg)
    assert st["enabled"] and st["entries"] >= 1 and st["bytes"] > 0
    assert stax.cache.clear(cfg) >= st["entries"]
    assert stax.cache.stats(cfg)["entries"] == 0
    assert stax.cache.dir({"devices": {"cpu": {"backend": "cpu_cpp"}}, "cache": False}) is None


def test_kernels_come_from_the_cache_the_second_time():
    g = example("mlp_layer.stax")
    first = stax.Compiler("cpu").compile(g)
    second = stax.Compiler("cpu").compile(g)  # a new Compiler: no in-process cache
    assert first.stats["kernels_compiled"] + first.stats["kernels_from_disk"] >= 1
    assert second.stats["kernels_compiled"] == 0
    assert second.stats["kernels_from_disk"] == second.num_kernels
