# The Python side of cuda_triton (plugins/cuda_triton/triton_worker.h): a persistent worker that
# the plugin starts as `python3 -u -c <this text> <dir>` with its end of a socket pair on fd 3.
# It loads kernel modules, compiles them with Triton for GPUTarget("cuda", arch, 32) and, in the
# interpreter mode (TRITON_INTERPRET=1 in its environment), runs them on buffers in a shared
# memory file the plugin fills.
#
# Frames, both ways: "<word> <length>\n" then <length> bytes. A request's payload is header lines
# "key=value", an empty line, then a body (module text); a reply is "OK" or "ERR" (the payload is
# the message). Every Python exception becomes an ERR reply; the worker never exits on one.
import importlib.util
import mmap
import os
import sys
import time
import traceback
import warnings

SOCK = 3
WORKDIR = sys.argv[1]
warnings.simplefilter("ignore")  # numpy casts of masked-off lanes, Triton's notices
os.environ.setdefault("TRITON_DEFAULT_FP_FUSION", "0")

import triton  # noqa: E402  (after the environment is set)

INTERPRET = os.environ.get("TRITON_INTERPRET") == "1"


def patch_libdevice():
    """Triton's interpreter leaves libdevice's functions as stubs (they return None): give the
    ones the printer uses numpy bodies, so the same kernel text runs compiled and interpreted."""
    import numpy as np
    import triton.language as tl
    from triton.language.extra import libdevice
    from triton.runtime.interpreter import TensorHandle

    def wrap(x):
        return x.handle.data if isinstance(x, tl.tensor) else np.asarray(x)

    def make(f):
        def call(*args, **kwargs):
            tensors = [a for a in args if isinstance(a, tl.tensor)]
            scalar = tensors[0].handle.dtype.scalar
            npdt = tensors[0].handle.data.dtype
            res = np.asarray(f(*[wrap(a).astype(npdt) for a in args])).astype(npdt)
            shape = list(res.shape)
            ty = tl.block_type(scalar, shape) if shape else scalar
            return tl.tensor(TensorHandle(res, scalar), ty)
        return call

    # Transcendental functions from SLEEF, like the reference interpreter (scalar_ops.hpp:
    # Sleef_cinz_<f>f1_u10purec / ..d1.., docs/vector_math.md), with its refinements (the
    # default NaN, log1p above SLEEF's domain, float32 erf and exp as Stax's own formulas), so
    # interpreted pointwise kernels agree with it bit for bit; numpy's own float32 / SIMD
    # versions differ in the last bits.
    import ctypes
    sleef = ctypes.CDLL("libsleef.so.3")

    def c_math(name, nargs):
        fns = {}
        for suffix, ctype, npdt in (("f1", ctypes.c_float, np.float32), ("d1", ctypes.c_double, np.float64)):
            fn = getattr(sleef, "Sleef_cinz_" + name + suffix + "_u10purec")
            fn.restype = ctype
            fn.argtypes = [ctype] * nargs
            fns[npdt] = np.frompyfunc(fn, nargs, 1)

        def run(*arrays):
            dt = arrays[0].dtype.type
            if arrays[0].size == 0:
                return np.broadcast_arrays(*arrays)[0].astype(dt)
            if name == "exp" and dt == np.float32:
                return exp_f32(np.asarray(arrays[0], dtype=np.float32))
            r = np.asarray(fns[dt](*arrays)).astype(dt)
            x = np.broadcast_arrays(*arrays)[0].astype(dt)
            if name == "log1p":
                big = np.asarray(fns_log[dt](x)).astype(dt)
                r = np.where(x > (dt(1e38) if dt == np.float32 else dt(1e307)), big, r)
            if name == "erf" and dt == np.float32:
                r = erf_f32(x)
            return np.where(r != r, dt(np.nan), r).astype(dt)
        return run

    # erf over float32: Stax's own formula, scalar_ops.hpp's erf_f32 step for step (numpy rounds
    # every operation, as the C text does with contraction off; fmas as fma_f32).
    def erf_f32(x):
        f = np.float32

        def horner(t, coefs):  # coefs from the constant term up
            r = np.full_like(t, f(coefs[-1]))
            for c in reversed(coefs[:-1]):
                r = fma_f32(r, t, f(c))
            return r
        ax = np.abs(x)
        z = (x * x).astype(f)
        q = horner(z, (1.283791661e-01, -3.761263788e-01, 1.128377840e-01, -2.686474286e-02,
                       5.216690712e-03, -8.355375030e-04, 9.461307491e-05))
        small = fma_f32(x, q, x)
        m = horner((ax - f(1.125)).astype(f),
                   (-4.463823140e-02, -3.182739615e-01, 3.580582738e-01, -1.624518335e-01,
                    -2.797647566e-02, 6.131064147e-02, -1.547973417e-02, -9.483876638e-03,
                    5.604335573e-03))
        a = np.where(ax < f(3.95), ax, f(3.95)).astype(f)
        t = horner((a - f(2.75)).astype(f),
                   (1.006225211e-04, -5.862754188e-04, 1.612218330e-03, -2.760430332e-03,
                    3.258619690e-03, -2.755520167e-03, 1.655136701e-03, -6.469347863e-04,
                    9.360653348e-05, 7.264544547e-05, -6.012218728e-05, 1.466897174e-05,
                    4.139960765e-06, -2.261292138e-06))
        mid = ax < f(1.5)
        p = np.where(mid, m, t).astype(f)
        base = np.where(mid, f(0.84375), f(1)).astype(f)
        large = np.copysign((base - p).astype(f), x).astype(f)
        return np.where(ax >= f(0.75), large, small).astype(f)

    # fma over float32, rounded once like C's fmaf: a*b is exact in float64, a*b + c is rounded
    # to odd in float64 (the sum rounded to nearest, its exact error from TwoSum, and an even
    # result moved one ulp toward the error), and rounding that to float32 rounds the exact value
    # (53 >= 24 + 2 bits). Inputs are finite floats whose products stay normal in float64.
    def fma_f32(a, b, c):
        p = np.asarray(a, dtype=np.float64) * np.asarray(b, dtype=np.float64)
        c = np.asarray(c, dtype=np.float64)
        s = p + c
        bb = s - p
        err = (p - (s - bb)) + (c - bb)
        sb = s.view(np.int64)
        odd = (err != 0) & ((sb & 1) == 0)
        step = np.where((err > 0) == (s > 0), 1, -1).astype(np.int64)
        s = np.where(odd, sb + step, sb).view(np.float64)
        return s.astype(np.float32)

    # exp over float32: Stax's own formula, scalar_ops.hpp's exp_f32 step for step.
    def exp_f32(x):
        f = np.float32
        xc = np.where(x > f(-104), x, f(-104)).astype(f)
        xc = np.where(xc < f(89), xc, f(89)).astype(f)
        s = fma_f32(xc, f(1.44269502162933349609375), f(12582912.0))
        n = (s - f(12582912.0)).astype(f)
        r = fma_f32(n, f(-0.693147182464599609375), xc)
        r = fma_f32(n, f(1.904654323148236e-09), r)
        p = np.full_like(r, f(1.381455921e-03))
        for c in (8.368736133e-03, 4.166838899e-02, 1.666652113e-01, 4.999999404e-01):
            p = fma_f32(p, r, f(c))
        u = (f(1) + r).astype(f)
        e = ((f(1) - u).astype(f) + r).astype(f)
        y = (u + fma_f32((r * r).astype(f), p, e)).astype(f)
        b = np.ascontiguousarray(s).view(np.uint32)
        b1 = b >> np.uint32(1)
        s1 = ((b1 + np.uint32(127)) << np.uint32(23)).view(f)
        s2 = ((b - b1 + np.uint32(127)) << np.uint32(23)).view(f)
        y = ((y * s1).astype(f) * s2).astype(f)
        return np.where(x != x, f(np.nan), y).astype(f)

    fns_log = {}
    for suffix, ctype, npdt in (("f1", ctypes.c_float, np.float32), ("d1", ctypes.c_double, np.float64)):
        fn = getattr(sleef, "Sleef_cinz_log" + suffix + "_u10purec")
        fn.restype = ctype
        fn.argtypes = [ctype]
        fns_log[npdt] = np.frompyfunc(fn, 1, 1)

    table = {name: c_math(name, 1) for name in (
        "exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "sin", "cos", "tan", "tanh",
        "erf")}
    table.update({"pow": c_math("pow", 2), "floor": np.floor, "ceil": np.ceil, "rint": np.rint,
                  "trunc": np.trunc, "fmod": np.fmod, "copysign": np.copysign})
    for name, f in table.items():
        setattr(libdevice, name, make(f))
    np.seterr(all="ignore")


def patch_reduce():
    """The interpreter reduces with a custom combine function one element at a time in Python
    (minutes for the e2e set). The printer's combine functions (triton_printer.cpp's prelude) get
    numpy equivalents with the same semantics: sums and products in numpy's order (another tree:
    within the same §6.5 bound), NaN-propagating max / min, exact integer max / min, any / all,
    and argmax / argmin as the lexicographic (value, index) choice of stax_arg_prefer (NaN is the
    extreme, ties go to the smaller index). Other combine functions keep the interpreter's path."""
    import numpy as np
    from triton.runtime import interpreter as interp

    def lowest(d, is_max):
        if np.issubdtype(d, np.floating):
            return -np.inf if is_max else np.inf
        info = np.iinfo(d)
        return info.min if is_max else info.max

    def arg(v, i, axis, is_max):
        isn = v != v
        anyn = isn.any(axis=axis, keepdims=True)
        vv = np.where(isn, lowest(v.dtype, is_max), v)
        ext = vv.max(axis=axis, keepdims=True) if is_max else vv.min(axis=axis, keepdims=True)
        sel = np.where(anyn, isn, vv == ext)
        pos = np.argmin(np.where(sel, i, np.iinfo(np.int64).max), axis=axis)
        pos = np.expand_dims(pos, axis)
        return (np.take_along_axis(v, pos, axis).squeeze(axis),
                np.take_along_axis(i, pos, axis).squeeze(axis))

    plain = {
        "stax_sum_combine": lambda d, a: np.add.reduce(d, axis=a, dtype=d.dtype),
        "stax_prod_combine": lambda d, a: np.multiply.reduce(d, axis=a, dtype=d.dtype),
        "stax_maximum": lambda d, a: np.max(d, axis=a),
        "stax_minimum": lambda d, a: np.min(d, axis=a),
        "stax_imax_combine": lambda d, a: np.max(d, axis=a),
        "stax_imin_combine": lambda d, a: np.min(d, axis=a),
        "stax_or_combine": lambda d, a: np.any(d != 0, axis=a),
        "stax_and_combine": lambda d, a: np.all(d != 0, axis=a),
    }
    original = interp.ReduceOps.apply_impl

    def apply_impl(self, input):
        name = getattr(getattr(self.combine_fn, "fn", None), "__name__", "")
        if self.keep_dims or self.axis is None or not (name in plain or name in (
                "stax_argmax_combine", "stax_argmin_combine")):
            return original(self, input)
        if name in plain:
            d = input[0].handle.data
            return [self.to_tensor(np.asarray(plain[name](d, self.axis)).astype(d.dtype),
                                   input[0].dtype)]
        v, i = arg(input[0].handle.data, input[1].handle.data, self.axis,
                   name == "stax_argmax_combine")
        return [self.to_tensor(v, input[0].dtype), self.to_tensor(i, input[1].dtype)]

    interp.ReduceOps.apply_impl = apply_impl


def patch_bf16():
    """The interpreter converts float32 -> bfloat16 by truncating the significand (a GPU, and the
    reference, round to nearest even): give that cast the round-to-nearest-even bit recipe."""
    import numpy as np
    import triton.language as tl
    from triton.runtime import interpreter as interp
    original = interp.InterpreterBuilder.cast_impl

    def cast_impl(self, src, dst_type):
        if src.dtype.scalar == tl.float32 and dst_type.scalar == tl.bfloat16:
            u = np.ascontiguousarray(src.data, dtype=np.float32).view(np.uint32)
            nan = (u & 0x7FFFFFFF) > 0x7F800000
            r = ((u + np.uint32(0x7FFF) + ((u >> 16) & 1)) >> 16).astype(np.uint16)
            r = np.where(nan, ((u >> 16) | 0x40).astype(np.uint16), r)
            return interp.TensorHandle(r.view(interp._get_np_dtype(dst_type)), dst_type.scalar)
        return original(self, src, dst_type)

    interp.InterpreterBuilder.cast_impl = cast_impl


if INTERPRET:
    patch_libdevice()
    patch_bf16()
    if os.environ.get("STAX_TRITON_GENERIC_REDUCE") != "1":  # tests: the combines themselves
        patch_reduce()
    # device_assert is checked only in debug mode (the bounds checks of indirect indexing);
    # integer arithmetic wraps (scalar_ops.hpp), so no overflow sanitizer.
    from triton.runtime import interpreter as _interp
    _interp.interpreter_builder.options = _interp.InterpreterOptions(debug=True,
                                                                     sanitize_overflow=False)

modules = {}   # key -> the module's kernel function
mappings = {}  # shared memory path -> (mmap, base address, size)
retired = []


def read_exact(n):
    chunks = []
    while n > 0:
        b = os.read(SOCK, min(n, 1 << 20))
        if not b:
            sys.exit(0)  # the plugin closed its end
        chunks.append(b)
        n -= len(b)
    return b"".join(chunks)


def read_frame():
    line = b""
    while not line.endswith(b"\n"):
        c = os.read(SOCK, 1)
        if not c:
            sys.exit(0)
        line += c
    word, length = line.decode().split()
    return word, read_exact(int(length))


def send(word, payload):
    if isinstance(payload, str):
        payload = payload.encode()
    data = f"{word} {len(payload)}\n".encode() + payload
    while data:
        n = os.write(SOCK, data)
        data = data[n:]


def parse(payload):
    head, _, body = payload.partition(b"\n\n")
    fields = {}
    multi = {}
    for line in head.decode().splitlines():
        k, _, v = line.partition("=")
        fields[k] = v
        multi.setdefault(k, []).append(v)
    return fields, multi, body


def load(f, body):
    key = f["key"]
    path = os.path.join(WORKDIR, "stax_" + key + ".py")
    with open(path, "wb") as out:
        out.write(body)
    spec = importlib.util.spec_from_file_location("stax_" + key, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    modules[key] = getattr(mod, f["name"])
    return b""


def constexprs(f):
    out = {}
    for item in f.get("constexprs", "").split(","):
        if item:
            k, _, v = item.partition(":")
            out[k] = int(v)
    return out


def hinted_args(ttir, name):
    """The arguments of kernel `name` whose pointer carries tt.divisibility = 16 in the TTIR the
    compile produced (what reached the compiler, read back rather than assumed)."""
    import re
    start = ttir.index("tt.func public @" + name + "(")
    head = ttir[start:ttir.index("\n", start)]
    return [m.group(1) for m in re.finditer(r"%(\w+): !tt\.ptr<[^>]*> \{([^}]*)\}", head)
            if "tt.divisibility = 16" in m.group(2)]


def compile_kernel(f, body):
    import re
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource
    fn = modules[f["key"]]
    names = fn.arg_names
    sig = f["signature"].split(",") if f["signature"] else []
    ce = constexprs(f)
    signature = {}
    for i, name in enumerate(names):
        signature[name] = "constexpr" if name in ce else sig[i]
    # Pointer-alignment hints (Inductor's divisibility_16): the plugin checks at launch that every
    # pointer it passes is 16-byte aligned (gpu_backend_support.h: check_pointer_alignment).
    aligned = [int(i) for i in f.get("aligned", "").split(",") if i]
    attrs = {(i, ): [["tt.divisibility", 16]] for i in aligned}
    t0 = time.perf_counter()
    compiled = triton.compile(
        ASTSource(fn=fn, signature=signature, constexprs=ce, attrs=attrs),
        target=GPUTarget("cuda", int(f["arch"]), 32),
        options={"num_warps": int(f["num_warps"]), "enable_fp_fusion": False,
                 "enable_reflect_ftz": False, "debug": f.get("debug") == "1",
                 "sanitize_overflow": False})
    ms = (time.perf_counter() - t0) * 1000.0
    md = compiled.metadata
    ptx = compiled.asm["ptx"]
    entry = ptx[ptx.index(".entry"):]
    num_params = entry[:entry.index(")")].count(".param")
    hinted = hinted_args(compiled.asm["ttir"], fn.__name__)
    hinted_idx = ",".join(str(names.index(n)) for n in hinted)
    vector_ops = len(re.findall(r"\b(?:ld|st)\.global(?:\.\w+)*\.v[248]\b", ptx))
    head = (f"name={md.name}\nnum_warps={md.num_warps}\nshared={md.shared}\n"
            f"num_params={num_params}\nglobal_scratch_size={md.global_scratch_size}\n"
            f"profile_scratch_size={md.profile_scratch_size}\naligned={hinted_idx}\n"
            f"vector_memory_ops={vector_ops}\nms={ms:.3f}\n\n")
    return head.encode() + compiled.asm["cubin"]


class Ptr:
    """What the interpreter needs of a tensor argument: an address and a dtype name (the
    interpreter reads and writes memory through the address; no torch needed)."""

    def __init__(self, addr, dtype):
        self.addr = addr
        self.dtype = dtype

    def data_ptr(self):
        return self.addr

    def untyped_storage(self):
        return self

    def cpu(self):
        return self

    def new_empty(self, *args, **kwargs):
        return Ptr(0, self.dtype)

    def set_(self, storage, offset, size, stride):
        self.addr = storage.addr

    def storage_offset(self):
        return 0

    def size(self):
        return ()

    def stride(self):
        return ()

    def copy_(self, other):  # the interpreter's host copy is this memory itself
        pass


def mapping(path, size):
    m = mappings.get(path)
    if m is None or m[2] < size:
        if m is not None:
            retired.append(m)  # a ctypes view pins it; never unmapped while the worker runs
        fd = os.open(path, os.O_RDWR)
        try:
            mm = mmap.mmap(fd, size)
        finally:
            os.close(fd)
        import ctypes
        base = ctypes.addressof(ctypes.c_char.from_buffer(mm))
        m = (mm, base, size)
        mappings[path] = m
    return m


def run(f, multi):
    fn = modules[f["key"]]
    _, base, _ = mapping(f["shm"], int(f["shm_size"]))
    args = []
    for b in multi.get("buf", []):
        off, dtype = b.split(":")
        args.append(Ptr(base + int(off), dtype))
    # Typed arguments after the buffers (the fused-attention externs, triton_attention.h):
    # "p:<offset>:<dtype>" a pointer into the shared region, "i:<value>" an integer.
    for a in multi.get("arg", []):
        kind, _, rest = a.partition(":")
        if kind == "p":
            off, dtype = rest.split(":")
            args.append(Ptr(base + int(off), dtype))
        elif kind == "i":
            args.append(int(rest))
        else:
            raise ValueError("unknown argument " + a)
    fn[(int(f["grid"]), )](*args, **constexprs(f))
    return b""


def main():
    send("READY", triton.__version__)
    while True:
        word, payload = read_frame()
        if word == "QUIT":
            return
        if os.environ.get("STAX_TRITON_TEST_CRASH") == word:
            os._exit(3)  # tests: a worker that dies mid-request (cuda_triton_test)
        try:
            f, multi, body = parse(payload)
            if word == "LOAD":
                reply = load(f, body)
            elif word == "COMPILE":
                reply = compile_kernel(f, body)
            elif word == "RUN":
                reply = run(f, multi)
            else:
                raise ValueError("unknown request " + word)
            send("OK", reply)
        except BaseException as e:  # noqa: B036  every error is a reply, never an exit
            if isinstance(e, SystemExit):
                raise
            tb = traceback.format_exception(type(e), e, e.__traceback__)
            send("ERR", "".join(tb[-6:]))


main()
