"""stax.Graph: the builder, parsing (.stax text, seed listings, FX printouts), printing."""
import os

import pytest

import stax
from helpers import EXAMPLES, example


def build_example_1_1():
    g = stax.Graph()
    x = g.placeholder("primals_1", (64, 128))
    y = g.placeholder("primals_2", (64, 128))
    r = g.call("aten.relu.default", g.call("aten.add.Tensor", x, y))
    m = g.call("mul.Scalar", r, 2)
    g.output([g.call("sum.dim_IntList", m, [-1], name="sum_0")])
    return g


def test_builder_gives_the_example_text():
    g = build_example_1_1()
    with open(os.path.join(EXAMPLES, "example_1_1.stax")) as f:
        assert str(g) == f.read()
    assert len(g) == 7
    assert [p.name for p in g.placeholders] == ["primals_1", "primals_2"]
    (out,) = g.outputs
    assert out.name == "sum_0" and out.shape == (64,) and out.dtype == "float32"


def test_nodes_show_normalized_arguments():
    g = build_example_1_1()
    add = g.find("add")
    assert add.kind == "call_function" and add.target == "add.Tensor"
    assert [a.name for a in add.args[:2]] == ["primals_1", "primals_2"]
    assert add.kwargs == {"alpha": 1}
    assert [u.name for u in add.users] == ["relu"]
    s = g.find("sum_0")
    assert s.args[1] == [-1] and s.args[2] is False
    assert s.kwargs["dtype"] is stax.undefined or repr(s.kwargs["dtype"]) == "stax.undefined"
    assert g.find("nope") is None
    assert g.find("primals_1") == g.placeholders[0]
    assert "add.Tensor" in repr(add)


def test_call_function_takes_fx_style_arguments():
    g = stax.Graph()
    x = g.placeholder("x", (4, 8), dtype="float64")
    s = g.call_function("torch.ops.aten.sum.dim_IntList", (x, [1], True), {"dtype": stax.float32})
    g.output(s)
    assert s.shape == (4, 1) and s.dtype == "float32"
    torch = pytest.importorskip("torch")
    r = g.call_function(torch.ops.aten.relu.default, (s,), name="r")
    assert r.target == "relu.default" and r.name == "r"


def test_placeholder_dtypes_from_every_spelling():
    g = stax.Graph()
    assert g.placeholder("a", (2,), dtype=stax.int32).dtype == "int32"
    assert g.placeholder("b", (2,), dtype="bf16" if False else "bfloat16").dtype == "bfloat16"
    np = pytest.importorskip("numpy")
    assert g.placeholder("c", (2,), dtype=np.float16).dtype == "float16"
    assert g.placeholder("d", (2,), dtype=np.dtype("uint8")).dtype == "uint8"
    torch = pytest.importorskip("torch")
    assert g.placeholder("e", (2,), dtype=torch.bool).dtype == "bool"
    assert g.placeholder(None, (3,)).name == "primals_1"


def test_print_parse_round_trip_of_every_example():
    for name in sorted(os.listdir(EXAMPLES)):
        if not name.endswith(".stax") or name == "example_5_1_joint.stax":
            continue
        g = example(name)
        text = str(g)
        assert str(stax.Graph.parse(text)) == text, name


def test_joint_graph_listing():
    g = example("example_5_1_joint.stax")
    assert [n.phase for n in g.placeholders] == ["forward", "forward", "backward"]
    assert g.print("listing52").splitlines()[0].startswith("[FW] %primals_1")


FX_PRINTOUT = """graph():
    %x : [num_users=1] = placeholder[target=x]
    %w : [num_users=1] = placeholder[target=w]
    %mm : [num_users=1] = call_function[target=torch.ops.aten.mm.default](args = (%x, %w), kwargs = {})
    %relu : [num_users=1] = call_function[target=torch.ops.aten.relu.default](args = (%mm,), kwargs = {})
    return (relu,)
"""


def test_fx_printout_with_placeholder_metadata():
    g = stax.Graph.parse(FX_PRINTOUT, placeholders={"x": (3, 4), "w": ((4, 5), "float32")})
    assert g.outputs[0].shape == (3, 5)
    np = pytest.importorskip("numpy")
    g2 = stax.Graph.parse(FX_PRINTOUT, placeholders={"x": np.zeros((2, 4), np.float64),
                                                     "w": np.zeros((4, 6), np.float64)})
    assert g2.outputs[0].shape == (2, 6) and g2.outputs[0].dtype == "float64"


def test_parse_errors_name_file_line_and_column():
    with pytest.raises(stax.Error) as e:
        stax.Graph.parse("graph(\n    %x shape=(2,) = placeholder[target=x]\n    %y = call_function["
                         "target=tp.relu.default](args = (%z,))\n    return (y,)\n)\n", "bad.stax")
    assert e.value.stage == "parse"
    assert e.value.location.startswith("bad.stax:3:")
    assert "z" in e.value.message
    assert str(e.value).startswith("bad.stax:3:")


def test_unknown_op_suggests_names():
    g = stax.Graph()
    x = g.placeholder("x", (2,))
    with pytest.raises(stax.Error) as e:
        g.call("rleu", x)
    assert "relu" in str(e.value)


def test_wrong_arguments_are_errors():
    g = stax.Graph()
    x = g.placeholder("x", (2, 3))
    with pytest.raises(stax.Error):
        g.call("add.Tensor", x, "text")
    with pytest.raises(stax.Error):
        g.call("mm.default", x, x)  # (2, 3) @ (2, 3): shapes disagree
    other = stax.Graph().placeholder("y", (2, 3))
    with pytest.raises(stax.Error) as e:
        g.call("add.Tensor", x, other)
    assert "another graph" in str(e.value)
    with pytest.raises(stax.Error):
        g.call("add.Tensor", x, object())
    with pytest.raises(stax.Error):
        g.placeholder("z", (2,), dtype="complex32")
    with pytest.raises(stax.Error):
        g.placeholder("w", (-1, 2))


def test_load_missing_file_is_an_error():
    with pytest.raises(stax.Error) as e:
        stax.Graph.load("/no/such/graph.stax")
    assert "/no/such/graph.stax" in str(e.value)


def test_graphs_of_compiled_objects_are_read_only(cpu):
    f = cpu.compile(example("example_1_1.stax"))
    g = f.graph
    assert g.read_only
    with pytest.raises(stax.Error) as e:
        g.placeholder("q", (1,))
    assert "read-only" in str(e.value)
    c = g.clone()
    c.placeholder("q", (1,))
    assert len(c.placeholders) == 3
