"""The aten graph's rewrites before the split (stax.dynamo.aten_rewrite): the graph Stax gets, and
the values against eager."""
import pytest

torch = pytest.importorskip("torch")
import torch.nn as nn  # noqa: E402

import stax  # noqa: E402
from stax.dynamo import aten_rewrite, aten_trace  # noqa: E402

aten = torch.ops.aten


class _StridedLinear(nn.Module):
    """A Linear on a 3-D input that cannot be viewed as 2-D (the GPT block's attention output
    after transpose(1, 2).reshape(b, t, c)): torch's matmul decomposition makes it a bmm with the
    weight broadcast over the batch."""

    def __init__(self, c=16, n=12):
        super().__init__()
        self.lin = nn.Linear(c, n)

    def forward(self, x):  # x: (t, b, c)
        return self.lin(x.transpose(0, 1) * 2.0).relu()


def _aten_graph(module, args):
    graphs = []

    def capture(gm, example):
        graphs.append((gm, example))
        return gm

    torch.compile(module, backend=capture)(*args)
    gm, example = graphs[0]
    return aten_trace.trace(gm, list(example)).gm


def _targets(gm):
    return [n.target for n in gm.graph.nodes if n.op == "call_function"]


def test_linear_on_a_strided_input_becomes_one_mm():
    m = _StridedLinear()
    x = torch.randn(5, 3, 16)
    gm = _aten_graph(m, (x,))
    assert aten.bmm.default in _targets(gm)  # what torch's decomposition gives
    want = gm(*([x] + [p.detach() for p in m.parameters()]))
    assert aten_rewrite.linear_bmm_to_mm(gm) == 1
    targets = _targets(gm)
    assert aten.bmm.default not in targets and aten.mm.default in targets
    broadcasts = [n for n in gm.graph.nodes if n.op == "call_function"
                  and n.target is aten.expand.default and n.args[0].meta["val"].dim() == 2]
    assert not broadcasts  # the weight broadcast over the batch is gone
    got = gm(*([x] + [p.detach() for p in m.parameters()]))
    torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)
    for n in gm.graph.nodes:  # the split probes nodes by their example values
        if n.op == "call_function":
            assert isinstance(n.meta.get("val"), torch.Tensor), n.format_node()


def test_a_batched_product_of_two_batched_operands_is_kept():
    def f(a, b):
        return torch.bmm(a, b).sum(-1)

    a, b = torch.randn(4, 3, 5), torch.randn(4, 5, 2)
    gm = _aten_graph(f, (a, b))
    assert aten_rewrite.linear_bmm_to_mm(gm) == 0
    assert aten.bmm.default in _targets(gm)
    torch.testing.assert_close(gm(a, b)[0], f(a, b))


@pytest.mark.parametrize("shape", [(1, 3, 16), (5, 3, 16), (7, 1, 16)])
def test_strided_linear_trains_through_stax_as_eager(shape):
    torch.manual_seed(0)
    ref = _StridedLinear()
    mod = _StridedLinear()
    mod.load_state_dict(ref.state_dict())
    cm = stax.compile(mod)
    x = torch.randn(*shape)
    out, want = cm(x), ref(x)
    torch.testing.assert_close(out, want, rtol=1e-5, atol=1e-5)
    up = torch.randn_like(want)
    (out * up).sum().backward()
    (want * up).sum().backward()
    for (pn, p), (_, q) in zip(mod.named_parameters(), ref.named_parameters()):
        torch.testing.assert_close(p.grad, q.grad, rtol=1e-4, atol=1e-5, msg=pn)
    ex = stax.explain(cm)
    assert ex.partitions and not ex.fallbacks and not ex.eager_ops, str(ex)
    assert not any("expand" in s for s in ex.saved), str(ex)
