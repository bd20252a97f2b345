"""The bad-input list of issue 24: each a clear stax.Error (stage, location, the C++ message),
never a crashed interpreter."""
import os
import subprocess
import sys

import pytest

import stax
from helpers import example

np = pytest.importorskip("numpy")


@pytest.fixture(scope="module")
def ex11(cpu):
    return cpu.compile(example("example_1_1.stax"))


def test_wrong_dtype_or_shape_for_a_placeholder(ex11):
    good = np.zeros((64, 128), np.float32)
    with pytest.raises(stax.Error) as e:
        ex11(good, np.zeros((64, 128), np.float64))
    assert e.value.stage == "runtime" and e.value.location == "%primals_2"
    assert "float64(64, 128)" in e.value.message and "float32(64, 128)" in e.value.message
    with pytest.raises(stax.Error) as e:
        ex11(np.zeros((64, 127), np.float32), good)
    assert e.value.location == "%primals_1" and "(64, 127)" in e.value.message
    with pytest.raises(stax.Error) as e:
        ex11(good)
    assert "expected 2 inputs (primals_1, primals_2), got 1" in str(e.value)
    assert isinstance(e.value, RuntimeError)  # stax.Error is a RuntimeError


def test_wrong_inputs_to_grad_and_interpret(cpu):
    g = example("example_5_1_forward.stax")
    cf = stax.grad(g, wrt="primals_2", compiler=cpu)
    with pytest.raises(stax.Error) as e:
        cf(np.zeros((32, 64), np.float32), np.zeros((64, 64), np.int64))
    assert "primals_2" in str(e.value)
    with pytest.raises(stax.Error):
        stax.interpret(g, np.zeros((32, 64), np.float32))


def test_a_config_that_does_not_exist():
    with pytest.raises(stax.Error) as e:
        stax.Compiler("no_such_config")
    assert e.value.stage == "config" and "shipped: " in e.value.message and "cpu" in e.value.message
    with pytest.raises(stax.Error) as e:
        stax.Compiler("/no/such/config.yaml")
    assert e.value.location == "/no/such/config.yaml"
    with pytest.raises(stax.Error) as e:
        stax.Compiler({"devices": {"cpu": {"backend": "cpu_cpp"}}, "colour": "blue"})
    assert e.value.stage == "config" and e.value.location.startswith("<dict>:1:")
    assert "unknown key 'colour'" in e.value.message
    with pytest.raises(stax.Error) as e:
        stax.Compiler({"devices": {"cpu": {"backend": "no_such_backend"}}})
    assert "no_such_backend" in str(e.value)
    with pytest.raises(stax.Error) as e:
        stax.Compiler("cpu", device="npu")
    assert "no device 'npu'" in str(e.value)
    with pytest.raises(stax.Error):
        stax.Compiler({"devices": {"cpu": {"backend": "cpu_cpp", "options": {"opt_level": "x"}}}}
                      ).compile(example("example_1_1.stax"))


def test_a_bad_config_file_names_its_line(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("devices:\n  cpu:\n    backend: cpu_cpp\n    optoins: {}\n")
    with pytest.raises(stax.Error) as e:
        stax.Compiler(str(bad))
    assert e.value.location == f"{bad}:4:5"
    assert str(e.value).startswith(f"{bad}:4:5: error: unknown key 'optoins'")


def test_a_graph_that_fails_to_compile(cpu):
    g = stax.Graph()
    x = g.placeholder("x", (4,), device="npu")  # no such device in the config
    g.output(g.call("relu", x))
    with pytest.raises(stax.Error) as e:
        cpu.compile(g)
    assert "npu" in str(e.value)
    # A Python traceback carrying Stax's message, file:line:col included.
    script = ("import stax\n"
              "stax.Compiler('cpu').compile('graph(\\n    %x shape=(2,) = placeholder[target=x]\\n"
              "    %y = call_function[target=tp.nope.default](args = (%x,))\\n    return (y,)\\n)\\n')\n")
    r = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                       env=dict(os.environ))
    assert r.returncode == 1
    assert "Traceback (most recent call last)" in r.stderr
    assert "stax.Error: <string>:3:" in r.stderr and "nope" in r.stderr


def test_a_device_tensor_a_freed_tensor_a_non_tensor(ex11):
    class OnCuda:
        def __dlpack_device__(self):
            return (2, 0)

        def __dlpack__(self, **kwargs):
            raise BufferError("cannot copy")

    good = np.zeros((64, 128), np.float32)
    for bad, needle in ((OnCuda(), "cuda:0"), ("text", "expected a tensor"),
                        (None, "expected a tensor")):
        with pytest.raises(stax.Error) as e:
            ex11(good, bad)
        assert e.value.stage == "input" and e.value.location == "input 'primals_2'"
        assert needle in e.value.message
    torch = pytest.importorskip("torch")
    freed = torch.zeros(64, 128)
    freed.untyped_storage().resize_(0)
    with pytest.raises(stax.Error) as e:
        ex11(good, freed)
    assert "no memory" in e.value.message
    resized = torch.zeros(64, 128)
    resized.resize_(10)
    with pytest.raises(stax.Error) as e:
        ex11(good, resized)
    assert "(10,)" in e.value.message
