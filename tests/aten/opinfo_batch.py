"""Running many OpInfo cases (opinfo_cases.Case) through `stax` at once: the cases' FX printouts
become one graph of disjoint parts (every name prefixed c<K>_), so that one process runs all the
samples of an entry in a mode: the interpreter (`stax run`), compiled (`stax run --config`) or the
compiled gradient (`stax grad`). A batch that fails drops the case its error names (a node
c<K>_...) and runs again; a crash or an error naming no case falls back to one run per case, so
every failure is attributed to its own case."""
import os
import re

import fxrun

_NAME = re.compile(r"%([A-Za-z_][A-Za-z0-9_]*)")
_TARGET = re.compile(r"^(\s*%(\w+)\b.*=\s*(?:placeholder|get_attr)\[target=)[^\]]*(\])")
_CASE_IN_ERROR = re.compile(r"%c(\d+)_")


def _prefixed(case, k):
    """(body lines, output names, input names) of case k's printout, every name prefixed."""
    p = "c%d_" % k
    body, outs = [], []
    for line in case.text.splitlines():
        s = line.strip()
        if not s or s.startswith("graph("):
            continue
        if s.startswith("return"):
            outs = [p + n for n in re.findall(r"[A-Za-z_][A-Za-z0-9_]*", s[len("return"):])]
            continue
        line = _NAME.sub(lambda m: "%" + p + m.group(1), line)
        line = _TARGET.sub(lambda m: m.group(1) + m.group(2) + m.group(3), line)
        body.append(line)
    return body, outs


def write_batch(workdir, cases):
    """Writes graph.stax (the cases side by side) and the inputs; -> (--input arguments,
    {case index: (first output, output count)})."""
    os.makedirs(workdir, exist_ok=True)
    lines, outs, spans, args = ["graph():"], [], {}, []
    for k, case in cases:
        body, names = _prefixed(case, k)
        if len(names) != len(case.want):
            raise RuntimeError("case %d returns %d values, torch %d" % (k, len(names),
                                                                         len(case.want)))
        lines += body
        spans[k] = (len(outs), len(names))
        outs += names
        p = "c%d_" % k
        for name, t in zip(case.names, case.leaves):
            path = os.path.join(workdir, p + name + ".npy")
            fxrun.save_npy(path, t)
            args += ["--input", "%s=%s" % (p + name, path)]
        for n in case.gm.graph.nodes:
            if n.op == "get_attr":
                path = os.path.join(workdir, p + n.name + ".npy")
                fxrun.save_npy(path, getattr(case.gm, n.target))
                args += ["--input", "%s=%s" % (p + n.name, path)]
    lines.append("    return (%s)" % ", ".join(outs))
    with open(os.path.join(workdir, "graph.stax"), "w") as f:
        f.write("\n".join(lines) + "\n")
    return args, spans


def _check(r, mode, k, case, span):
    """None when case k's results in stax result r match torch, else 'fail: ...'."""
    first, count = span
    for i in range(count):
        got = r.load("out%d.npy" % (first + i))
        w = case.want[i]
        if case.random:  # random ops: shape and dtype only
            diff = (None if tuple(got.shape) == tuple(w.shape)
                    else "shape %s vs %s" % (got.shape, tuple(w.shape)))
        else:
            diff = fxrun.compare(got, w, ref64=case.ref64(i))
        if diff:
            return "fail: output %d: %s" % (i, diff)
    if mode == "grad":
        p = "c%d_" % k
        for j, (i, g) in enumerate(zip(case.wrt, case.want_grads)):
            name = case.names[i]
            diff = fxrun.compare(r.load("grad_%s.npy" % (p + name)), g, grad=True,
                                 ref64=case.ref64(j, grad=True))
            if diff:
                return "fail: grad of %s: %s" % (name, diff)
    return None


def _run(stax, mode, workdir, cases, config):
    inputs, spans = write_batch(workdir, cases)
    wrt = ["c%d_%s" % (k, c.names[i]) for k, c in cases for i in c.wrt] if mode == "grad" else ()
    return fxrun.run_stax(stax, mode, workdir, inputs, config, wrt=wrt), spans


def _failure(r):
    """The stax process's failure, its names without the case prefix."""
    return ("crash: " if r.crashed else "fail: ") + re.sub(r"%c\d+_", "%", r.error())


def run_mode(stax, mode, workdir, cases, config):
    """cases: [(k, Case)] -> {k: None (pass) | 'fail: ...' | 'crash: ...'}; one stax process
    for the whole batch when every case passes."""
    results, todo, attempt = {}, list(cases), 0
    while todo:
        attempt += 1
        r, spans = _run(stax, mode, os.path.join(workdir, "%s%d" % (mode, attempt)), todo, config)
        if r.code == 0:
            for k, case in todo:
                results[k] = _check(r, mode, k, case, spans[k])
            return results
        if len(todo) == 1:
            results[todo[0][0]] = _failure(r)
            return results
        named = {int(m) for m in _CASE_IN_ERROR.findall(r.error())} & {k for k, _ in todo}
        if r.crashed or len(named) != 1:
            break
        k = named.pop()
        results[k] = _failure(r)
        todo = [(j, c) for j, c in todo if j != k]
    for k, case in todo:  # one process per case: every failure its own
        r, spans = _run(stax, mode, os.path.join(workdir, "%s_c%d" % (mode, k)), [(k, case)],
                        config)
        results[k] = _check(r, mode, k, case, spans[k]) if r.code == 0 else _failure(r)
    return results
