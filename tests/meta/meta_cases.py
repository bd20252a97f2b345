"""Cases of the meta-differential test (meta_differential.py): Stax's op schemas read from
`stax ops --tsv`, and argument values drawn for them, random and at the edges of validity.

A case is one call of one op: a list of argument values in schema order (Arg.ABSENT where the
default is left to the op). Tensor arguments are TensorSpec(shape, dtype); lists hold values.
Drawing is deterministic for a (seed, op) pair: random.Random(f"{seed}:{op}").

How values are drawn (the generator knows no op's rule; it knows what arguments are usually
called, so that many cases land near validity, where a loose check shows):
  * a case has a base shape (rank 0 to 4, sizes 0 to 5, mostly 1 to 4) and a base dtype;
  * tensors take the base shape, a broadcastable variant of it (leading dimensions dropped,
    sizes set to 1), or an unrelated shape; indices, targets and masks take integer or bool
    dtypes by their parameter names;
  * ints named like dimensions fall in [-rank-1, rank]; sizes, kernel sizes, strides,
    paddings, groups and counts are small, sometimes 0 or negative;
  * int lists named dim/dims are subsets of the dimensions (sometimes repeated or out of
    range); size/shape lists are the base shape, a reshaping of its element count or random;
  * optional arguments are None, and defaulted ones left out, a part of the time.
Mutants: from a case torch accepts, more cases that change one thing: one tensor's shape (a size
+1 or -1, a dimension added or dropped) or dtype, or one int. They probe exactly the checks a
verifier can forget (issue 28: conv2d's bias of the wrong shape).
"""
import random
import re

DTYPES = ["float32", "float64", "float16", "bfloat16", "int64", "int32", "int8", "uint8", "bool"]
FLOATS = ["float32", "float64", "float16", "bfloat16"]
INTS = ["int64", "int32", "int8", "uint8"]


class Absent:
    def __repr__(self):
        return "ABSENT"


ABSENT = Absent()


class TensorSpec:
    __slots__ = ("shape", "dtype")

    def __init__(self, shape, dtype):
        self.shape = tuple(shape)
        self.dtype = dtype

    def __repr__(self):
        return "%s%s" % (self.dtype, list(self.shape))


class DType:
    """A ScalarType argument (written torch.<name> in both worlds)."""
    __slots__ = ("name",)

    def __init__(self, name):
        self.name = name

    def __repr__(self):
        return "torch." + self.name


class Param:
    def __init__(self, type_text, name, default, kwarg_only):
        self.name = name
        self.default = default  # text or None
        self.kwarg_only = kwarg_only
        t = re.sub(r"\([^)]*\)", "", type_text).strip()  # alias annotations: Tensor(a -> *)
        self.optional_list = t.endswith("?[]")         # Tensor?[]
        if self.optional_list:
            t = t[:-3] + "[]"
        self.optional = t.endswith("?")
        if self.optional:
            t = t[:-1]
        m = re.match(r"^(\w+)(\[(\d*)\])?$", t)
        if not m:
            raise ValueError("cannot read the type %r" % type_text)
        self.base = m.group(1)  # Tensor, int, SymInt, float, bool, Scalar, ScalarType, str, ...
        if self.base == "SymInt":
            self.base = "int"
        self.is_list = m.group(2) is not None
        self.list_len = int(m.group(3)) if m.group(3) else None

    def __repr__(self):
        return "%s%s%s %s" % (self.base, "[]" if self.is_list else "", "?" if self.optional else "",
                               self.name)


class Schema:
    def __init__(self, name, text):
        self.name = name  # the Stax op name: add.Tensor, abs, all.default
        self.text = text
        m = re.match(r"^([\w.]+)\((.*)\)\s*->\s*(.+)$", text)
        if not m:
            raise ValueError("cannot read the schema %r" % text)
        self.params = []
        kwarg_only = False
        for item in split_top(m.group(2)):
            item = item.strip()
            if not item:
                continue
            if item == "*":
                kwarg_only = True
                continue
            decl, _, default = item.partition("=")
            type_text, _, pname = decl.strip().rpartition(" ")
            self.params.append(Param(type_text, pname, default.strip() if default else None,
                                     kwarg_only))
        ret = re.sub(r"\([a-z!]*( -> \*)?\)", "", m.group(3).strip())
        if ret.startswith("("):
            self.returns = ("tuple", len(split_top(ret[1:-1])))
        elif ret.endswith("[]"):
            self.returns = ("list", None)
        else:
            self.returns = ("tensor", 1)

    @property
    def aten_name(self):
        base, _, overload = self.name.partition(".")
        return base, overload or "default"


def split_top(text):
    """Splits at commas outside brackets and quotes."""
    out, depth, cur, quote = [], 0, "", None
    for c in text:
        if quote:
            cur += c
            if c == quote:
                quote = None
            continue
        if c in "'\"":
            quote = c
        elif c in "([":
            depth += 1
        elif c in ")]":
            depth -= 1
        elif c == "," and depth == 0:
            out.append(cur)
            cur = ""
            continue
        cur += c
    out.append(cur)
    return out


# ---- drawing values -----------------------------------------------------------------------

DIM_NAMES = {"dim", "dim0", "dim1", "dim2", "dimension", "axis"}
INDEX_TENSORS = {"index", "indices", "target", "idx", "boundaries", "sorter", "offsets",
                 "test_elements", "n"}
BOOL_TENSORS = {"mask", "condition"}
SMALL_COUNTS = {"chunks", "split_size", "sections", "groups", "upscale_factor", "downscale_factor",
                "k", "num_groups", "group", "num_weights", "p", "steps", "decimals"}


def draw_shape(rng, rank=None):
    if rank is None:
        rank = rng.choice([0, 1, 1, 2, 2, 2, 3, 3, 4])
    return [rng.choice([0, 1, 1, 2, 2, 3, 3, 4, 4, 5]) if rng.random() < 0.15 else
            rng.choice([1, 2, 3, 4]) for _ in range(rank)]


def broadcast_variant(rng, shape):
    s = list(shape)
    drop = rng.randint(0, len(s)) if rng.random() < 0.3 else 0
    s = s[drop:]
    return [1 if rng.random() < 0.25 else d for d in s]


def draw_dtype(rng, base):
    r = rng.random()
    if r < 0.7:
        return base
    return rng.choice(DTYPES)


class Drawer:
    """Values for one case of one schema."""

    def __init__(self, rng, schema):
        self.rng = rng
        self.schema = schema
        self.shape = draw_shape(rng)
        self.dtype = rng.choice(FLOATS + FLOATS + INTS + ["bool"])
        self.rank = len(self.shape)

    def tensor(self, name):
        rng = self.rng
        if name in BOOL_TENSORS:
            dtype = "bool" if rng.random() < 0.85 else rng.choice(DTYPES)
        elif name in INDEX_TENSORS:
            dtype = "int64" if rng.random() < 0.8 else rng.choice(DTYPES)
        else:
            dtype = draw_dtype(rng, self.dtype)
        r = rng.random()
        if r < 0.55:
            shape = list(self.shape)
        elif r < 0.8:
            shape = broadcast_variant(rng, self.shape)
        else:
            shape = draw_shape(rng)
        return TensorSpec(shape, dtype)

    def int_value(self, name):
        rng = self.rng
        if name in DIM_NAMES or name.startswith("dim"):
            return rng.randint(-self.rank - 1, max(self.rank, 0))
        if name in SMALL_COUNTS:
            return rng.choice([1, 1, 2, 2, 3, 4, 0, -1])
        if name in ("diagonal", "offset", "shifts"):
            return rng.randint(-3, 3)
        if name == "reduction":
            return rng.choice([0, 1, 2, 2, 3])
        if name in ("ignore_index", "padding_idx"):
            return rng.choice([-100, -1, 0, 1])
        if name in ("start", "end", "length", "step", "index", "low", "high", "row", "col",
                    "n", "m", "output_size", "size"):
            return rng.choice([0, 1, 2, 3, 4, 5, -1])
        return rng.choice([0, 1, 2, 3, -1, 4])

    def int_list(self, p):
        rng = self.rng
        name = p.name
        n = p.list_len
        if name in ("dim", "dims", "dims_list"):
            k = rng.randint(0, self.rank) if self.rank else rng.choice([0, 1])
            dims = rng.sample(range(self.rank), k) if self.rank else [0] * k
            dims = [d - self.rank if rng.random() < 0.3 else d for d in dims]
            if rng.random() < 0.1 and dims:
                dims.append(dims[0])  # repeated
            if rng.random() < 0.1:
                dims.append(self.rank + 1)  # out of range
            if n is not None and rng.random() < 0.7:
                dims = dims[:n] if len(dims) >= n else dims
            return dims
        if name in ("size", "shape", "sizes", "output_size") and n is None:
            r = rng.random()
            if r < 0.5:
                return list(self.shape)
            if r < 0.75:
                numel = 1
                for d in self.shape:
                    numel *= d
                return reshape_of(rng, numel)
            return draw_shape(rng)
        if name == "normalized_shape":
            k = rng.randint(0, self.rank)
            s = self.shape[self.rank - k:]
            return [d + 1 for d in s] if rng.random() < 0.15 and s else list(s)
        if name == "repeats":
            return [rng.choice([1, 1, 2, 3]) for _ in range(self.rank + rng.choice([0, 0, 1, -1]))]
        if name in ("split_size", "split_sizes"):
            return [rng.choice([0, 1, 2, 3]) for _ in range(rng.randint(1, 3))]
        if name in ("pad", "padding") and n is None:
            return [rng.choice([0, 1, 2, -1]) for _ in range(2 * rng.randint(0, max(self.rank, 1)))]
        if name == "stride" and n is None:
            return [rng.choice([1, 2, 4]) for _ in range(self.rank)]
        length = n if n is not None else rng.randint(0, 3)
        if n is not None and rng.random() < 0.1:
            length = rng.choice([0, 1, n + 1])
        lo = {"kernel_size": 1, "stride": 1, "dilation": 1, "output_size": 1}.get(name, 0)
        vals = [rng.choice([lo, lo, lo + 1, lo + 2, 3]) for _ in range(length)]
        if rng.random() < 0.08 and vals:
            vals[rng.randrange(len(vals))] = rng.choice([0, -1])
        return vals

    def float_value(self, name):
        rng = self.rng
        if name == "p" and self.schema.name.startswith(("dropout", "bernoulli")):
            return rng.choice([0.0, 0.5, 1.0, 1.5, -0.5])
        if name in ("eps", "delta", "beta"):
            return rng.choice([1e-05, 1.0, 0.5, 0.0])
        if name == "momentum":
            return 0.1
        return rng.choice([0.0, 1.0, -1.5, 2.0, 0.5, float("inf")])

    def scalar_value(self, name):
        rng = self.rng
        r = rng.random()
        if r < 0.45:
            return rng.choice([0, 1, 2, -1, 3])
        if r < 0.9:
            return rng.choice([0.5, -1.5, 2.0, 1e-3])
        return rng.choice([True, False])

    def str_value(self, name):
        table = {
            "approximate": ["none", "tanh", "bad"],
            "rounding_mode": ["trunc", "floor", "bad"],
            "reduce": ["sum", "prod", "mean", "amax", "amin", "bad"],
            "padding": ["valid", "same", "bad"],
            "side": ["left", "right", "bad"],
        }
        return self.rng.choice(table.get(name, ["none"]))

    def value(self, p):
        rng = self.rng
        if p.default is not None and rng.random() < 0.3:
            return ABSENT
        if p.optional and rng.random() < 0.3:
            return None
        if p.base == "Tensor":
            if p.is_list:
                if p.optional_list:  # index's indices
                    k = rng.randint(1, max(1, self.rank))
                    return [None if rng.random() < 0.25 else
                            TensorSpec(draw_shape(rng, rng.choice([1, 1, 2])),
                                       "int64" if rng.random() < 0.8 else rng.choice(["bool", "int32"]))
                            for _ in range(k)]
                return [self.tensor("tensors") for _ in range(rng.randint(1, 3))]
            return self.tensor(p.name)
        if p.base == "int":
            return self.int_list(p) if p.is_list else self.int_value(p.name)
        if p.base == "float":
            if p.is_list:
                return [rng.choice([1.0, 2.0, 0.5]) for _ in range(rng.randint(1, 3))]
            return self.float_value(p.name)
        if p.base == "bool":
            if p.name == "pin_memory":  # True needs CUDA: not a shape question
                return ABSENT if p.default is not None else None
            return rng.random() < 0.5
        if p.base == "Scalar":
            return self.scalar_value(p.name)
        if p.base == "ScalarType":
            return DType(rng.choice(DTYPES))
        if p.base == "str":
            return self.str_value(p.name)
        if p.base in ("Layout", "Device", "MemoryFormat", "Generator"):
            return ABSENT if p.default is not None else None
        raise ValueError("no values for %r" % p)


def reshape_of(rng, numel):
    if numel == 0:
        return rng.choice([[0], [0, 3], [2, 0], [-1, 0]])
    dims, left = [], numel
    for _ in range(rng.randint(0, 2)):
        divisors = [d for d in range(1, left + 1) if left % d == 0]
        d = rng.choice(divisors)
        dims.append(d)
        left //= d
    dims.append(left)
    if rng.random() < 0.3:
        dims[rng.randrange(len(dims))] = -1
    if rng.random() < 0.1:
        dims[0] += 1  # a wrong element count
    return dims


# ---- recipes: consistent arguments for ops whose arguments must agree with each other --------
# Random shapes almost never make a valid convolution or matrix product; a recipe draws one
# (then mutants() perturbs it: that is where conv2d's unchecked bias showed). A recipe returns
# values for some parameters by name; the rest are drawn as usual. Half of an op's cases use it.

def _spatial(name):
    m = re.search(r"(\d)d", name)
    return int(m.group(1)) if m else 2


def recipe_conv(rng, schema):
    name = schema.name
    sp = _spatial(name) if not name.startswith("convolution") else rng.choice([1, 2, 3])
    transposed = "transpose" in name or (name.startswith("convolution") and rng.random() < 0.3)
    g = rng.choice([1, 1, 2])
    cin, cout = g * rng.randint(1, 2), g * rng.randint(1, 2)
    k = [rng.randint(1, 3) for _ in range(sp)]
    x = [rng.randint(1, 2), cin] + [kk + rng.randint(0, 3) for kk in k]
    dt = rng.choice(["float32", "float32", "float64", "bfloat16"])
    w = [cin, cout // g] + k if transposed else [cout, cin // g] + k
    out = {"input": TensorSpec(x, dt), "weight": TensorSpec(w, dt), "groups": g,
           "bias": TensorSpec([cout], dt) if rng.random() < 0.7 else None,
           "stride": [rng.choice([1, 1, 2]) for _ in range(sp)],
           "dilation": [1] * sp}
    if "padding" not in name:
        out["padding"] = [rng.choice([0, 0, 1]) for _ in range(sp)]
    if name.startswith("convolution"):
        out["transposed"] = transposed
        out["output_padding"] = [0] * sp
    if "transpose" in name:
        out["output_padding"] = [0] * sp
    return out


def recipe_matmul(rng, schema):
    dt = rng.choice(["float32", "float64", "bfloat16"])
    n, k, m, b = (rng.randint(1, 4) for _ in range(4))
    T = lambda *s: TensorSpec(list(s), dt)  # noqa: E731
    table = {
        "mm": {"self": T(n, k), "mat2": T(k, m)},
        "bmm": {"self": T(b, n, k), "mat2": T(b, k, m)},
        "addmm": {"self": T(n, m), "mat1": T(n, k), "mat2": T(k, m)},
        "baddbmm": {"self": T(b, n, m), "batch1": T(b, n, k), "batch2": T(b, k, m)},
        "addbmm": {"self": T(n, m), "batch1": T(b, n, k), "batch2": T(b, k, m)},
        "mv": {"self": T(n, k), "vec": T(k)},
        "addmv": {"self": T(n), "mat": T(n, k), "vec": T(k)},
        "addr": {"self": T(n, m), "vec1": T(n), "vec2": T(m)},
        "dot": {"self": T(k), "tensor": T(k)},
        "vdot": {"self": T(k), "other": T(k)},
        "matmul": {"self": T(b, n, k), "other": T(k, m)},
        "linear": {"input": T(b, n, k), "weight": T(m, k), "bias": T(m)},
    }
    return table.get(schema.name.split(".")[0], {})


def recipe_norm(rng, schema):
    dt = rng.choice(["float32", "float64", "bfloat16"])
    n, c, h = rng.randint(1, 3), rng.choice([2, 4, 6]), rng.randint(1, 4)
    x = TensorSpec([n, c, h], dt)
    C = lambda: TensorSpec([c], dt) if rng.random() < 0.8 else None  # noqa: E731
    base = schema.name.split(".")[0]
    if base in ("batch_norm", "native_batch_norm"):
        return {"input": x, "weight": C(), "bias": C(), "running_mean": C(), "running_var": C()}
    if base in ("layer_norm", "native_layer_norm"):
        return {"input": x, "normalized_shape": [c, h], "weight": TensorSpec([c, h], dt),
                "bias": TensorSpec([c, h], dt)}
    if base == "group_norm":
        return {"input": x, "num_groups": 2, "weight": C(), "bias": C()}
    if base == "native_group_norm":
        return {"input": x, "weight": C(), "bias": C(), "N": n, "C": c, "HxW": h, "group": 2}
    return {}


def recipe_pool(rng, schema):
    sp = _spatial(schema.name)
    k = [rng.randint(1, 3) for _ in range(sp)]
    x = [rng.randint(1, 2), rng.randint(1, 3)] + [kk + rng.randint(0, 3) for kk in k]
    dt = rng.choice(["float32", "float64", "bfloat16"])
    out = {"self": TensorSpec(x, dt), "input": TensorSpec(x, dt), "kernel_size": k,
           "stride": [rng.choice([1, 2]) for _ in range(sp)], "padding": [0] * sp,
           "dilation": [1] * sp, "output_size": [rng.randint(1, 3) for _ in range(sp)]}
    return out


def recipe_loss(rng, schema):
    n, c = rng.randint(1, 4), rng.randint(2, 5)
    dt = rng.choice(["float32", "float64"])
    return {"self": TensorSpec([n, c], dt), "target": TensorSpec([n], "int64"),
            "weight": TensorSpec([c], dt) if rng.random() < 0.5 else None}


def recipe_embedding(rng, schema):
    dt = rng.choice(["float32", "float64"])
    return {"weight": TensorSpec([rng.randint(2, 6), rng.randint(1, 4)], dt),
            "indices": TensorSpec(draw_shape(rng, rng.randint(1, 2)), "int64")}


RECIPES = [
    (re.compile(r"^(conv\d|conv_transpose|convolution)"), recipe_conv),
    (re.compile(r"^(mm|bmm|addmm|baddbmm|addbmm|mv|addmv|addr|dot|vdot|matmul|linear)\b"),
     recipe_matmul),
    (re.compile(r"^(batch_norm|native_batch_norm|layer_norm|native_layer_norm|group_norm|"
                r"native_group_norm)\b"), recipe_norm),
    (re.compile(r"^(max_pool|avg_pool|adaptive_|_adaptive_)"), recipe_pool),
    (re.compile(r"^(nll_loss|cross_entropy_loss|multi_margin_loss)\b"), recipe_loss),
    (re.compile(r"^embedding\b"), recipe_embedding),
]


def draw_case(rng, schema):
    d = Drawer(rng, schema)
    fixed = {}
    for pattern, recipe in RECIPES:
        if pattern.search(schema.name) and rng.random() < 0.5:
            fixed = recipe(rng, schema)
            break
    args = []
    for p in schema.params:
        args.append(fixed[p.name] if p.name in fixed else d.value(p))
    return args


def mutants(rng, schema, args, count):
    """Cases that change one thing of an accepted case."""
    out = []
    slots = []
    for i, a in enumerate(args):
        if isinstance(a, TensorSpec):
            slots.append((i, None))
        elif isinstance(a, list):
            for j, e in enumerate(a):
                if isinstance(e, TensorSpec):
                    slots.append((i, j))
        elif isinstance(a, int) and not isinstance(a, bool):
            slots.append((i, "int"))
    if not slots:
        return out
    for _ in range(count):
        i, j = rng.choice(slots)
        new = [list(a) if isinstance(a, list) else a for a in args]
        if j == "int":
            new[i] = args[i] + rng.choice([-2, -1, 1, 2])
            out.append(new)
            continue
        t = new[i] if j is None else new[i][j]
        shape = list(t.shape)
        r = rng.random()
        if r < 0.45 and shape:
            k = rng.randrange(len(shape))
            shape[k] = max(0, shape[k] + rng.choice([-1, 1, 2]))
        elif r < 0.6:
            shape.insert(rng.randint(0, len(shape)), rng.choice([1, 2]))
        elif r < 0.75 and shape:
            shape.pop(rng.randrange(len(shape)))
        else:
            t2 = TensorSpec(shape, rng.choice([d for d in DTYPES if d != t.dtype]))
            if j is None:
                new[i] = t2
            else:
                new[i][j] = t2
            out.append(new)
            continue
        t2 = TensorSpec(shape, t.dtype)
        if j is None:
            new[i] = t2
        else:
            new[i][j] = t2
        out.append(new)
    return out


def describe(schema, args):
    """A short text of a case, for reports."""
    parts = []
    for p, a in zip(schema.params, args):
        if a is ABSENT:
            continue
        parts.append("%s=%r" % (p.name, a))
    return "%s(%s)" % (schema.name, ", ".join(parts))
