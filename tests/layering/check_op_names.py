#!/usr/bin/env python3
"""No engine names an op (ctest `engines_name_no_op`; issue 26).

Takes the registered op names from the registry of this build (`stax ops --tsv`: the overload
names "add.Tensor", and their base names "add") and fails, naming file, line and op, when a file
outside core/ops/ spells one as a string literal:
  * an overload name ("add.Tensor", "getitem.default") anywhere;
  * a base name ("silu", "mm") where code acts on it: compared (== / !=), passed first to call(
    find( get( count( contains(, or listed with other op names in one { ... } initializer.
Scanned: core/ (but core/ops/, where the op families live), tools/ and python/stax/ (the
front ends). Comments are skipped. An engine that needs an op asks the op families for it by role
or trait (core/graph/op_traits.h) or through a table they fill. Not scanned: sdk/ and plugins/
(their op vocabulary is the loop-level ops of ops.def), tests/, docs/.

ALLOWED lists the exceptions, each with its reason.

  check_op_names.py --stax BIN [--root DIR]    the op names from BIN's `ops --tsv`
  check_op_names.py --ops-tsv FILE [--root DIR]
  check_op_names.py --self-test                must-fail test on a temporary tree
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCANNED = ["core", "tools", "python/stax"]
SKIPPED = ["core/ops"]
SUFFIXES = (".h", ".hpp", ".cpp", ".cc", ".inc", ".def", ".py")

# (file, literals, reason): the literals that file may spell although they are op names.
ALLOWED = [
    ("core/graph/graph.cpp",
     {"sum", "max", "min", "abs", "all", "any", "pow", "round", "slice", "index", "view"},
     "Graph::unique_name's Python builtins, which FX's node names avoid shadowing (sum_0): "
     "names of Python, not ops"),
    ("tools/stax/cmd_compile.cpp", {"all"}, "`--dump all`: every stage, not the op"),
    ("tools/stax/cmd_run.cpp",
     {"sum.default", "sum.dim_IntList", "mean.default", "mean.dim", "mm.default", "bmm.default",
      "matmul.default", "addmm.default", "abs"},
     "`stax run --check`'s §6.5 error bound, an oracle outside the compiler: it knows the term "
     "count of the sum-like ops it bounds and builds |a| with abs"),
    ("python/stax/dynamo/fx_import.py", {"getitem"},
     "the FX import translates FX's operator.getitem into the op of that name"),
]

CALLS = ("call", "find", "get", "count", "contains")
STRING = re.compile(r'"((?:[^"\\\n]|\\.)*)"' + r"|'((?:[^'\\\n]|\\.)*)'")


def op_names(tsv_text):
    """({overload names}, {base names}) of a `stax ops --tsv` listing."""
    full, base = set(), set()
    for line in tsv_text.splitlines():
        name = line.split("\t")[0].strip()
        if not name:
            continue
        full.add(name)
        base.add(name.split(".")[0])
    return full, base


def strip_comments(text, python):
    """text with comments blanked (newlines kept, so line numbers hold); strings kept."""
    out, i, n = [], 0, len(text)
    quotes = "\"'" if python else "\""
    while i < n:
        c = text[i]
        if c in quotes:
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            out.append(text[i:j + 1])
            i = j + 1
        elif python and c == "#" or not python and text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
        elif not python and text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif not python and c == "'":  # a char literal ('"' must not open a string)
            j = i + 1
            while j < n and text[j] != "'" and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            out.append(text[i:j + 1])
            i = j + 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def used_as_op(text, start, end):
    """Whether the literal text[start:end] is compared, passed first to a lookup, or listed."""
    before = text[:start].rstrip()
    after = text[end:].lstrip()
    if before.endswith(("==", "!=")) or after.startswith(("==", "!=")):
        return True
    m = re.search(r"\b(\w+)\s*\(\s*$", text[max(0, start - 64):start])
    return bool(m and m.group(1) in CALLS)


def listed_ops(text, base):
    """Offsets of the literals of { "a", "b" ... } lists (literals only) naming two ops or more."""
    found = set()
    for group in re.finditer(r"\{([^{}]*)\}", text):
        if STRING.sub("", group.group(1)).strip(" \t\n,"):
            continue  # not a list of strings alone (a block, a struct initializer)
        lits = [(m.start() + group.start(1), m.group(1) if m.group(1) is not None else m.group(2))
                for m in STRING.finditer(group.group(1))]
        ops = [(at, v) for at, v in lits if v in base]
        if len(ops) >= 2:
            found.update(at for at, _ in ops)
    return found


def scan_file(path, rel, full, base):
    """['rel:line: ...'] for the op names the file spells."""
    python = path.endswith(".py")
    with open(path, encoding="utf-8", errors="replace") as fh:
        text = strip_comments(fh.read(), python)
    allowed = set()
    for f, lits, _ in ALLOWED:
        if f == rel:
            allowed |= lits
    listed = listed_ops(text, base)
    problems = []
    for m in STRING.finditer(text):
        value = m.group(1) if m.group(1) is not None else m.group(2)
        if value in allowed:
            continue
        if value in full:
            kind = "the op"
        elif value in base and (m.start() in listed or used_as_op(text, m.start(), m.end())):
            kind = "the op name"
        else:
            continue
        line = text.count("\n", 0, m.start()) + 1
        problems.append(f"{rel}:{line}: names {kind} '{value}': only core/ops/<family>/ names "
                        "ops; give the engine a role or trait (core/graph/op_traits.h)")
    return problems


def check(root, full, base):
    problems = []
    for top in SCANNED:
        for dirpath, dirs, files in os.walk(os.path.join(root, top)):
            dirs[:] = sorted(d for d in dirs if d != "__pycache__")
            rel_dir = os.path.relpath(dirpath, root).replace(os.sep, "/")
            if any(rel_dir == s or rel_dir.startswith(s + "/") for s in SKIPPED):
                continue
            for f in sorted(files):
                if f.endswith(SUFFIXES):
                    problems += scan_file(os.path.join(dirpath, f), f"{rel_dir}/{f}", full, base)
    return problems


def self_test():
    """A tree whose engines name ops in each way must fail on each; core/ops and comments pass."""
    tsv = "add.Tensor\tpointwise\ngetitem.default\tview\nsilu.default\tcomposite\n" \
          "mm.default\textern\nbmm.default\textern\n"
    full, base = op_names(tsv)
    files = {
        "core/autodiff/e.cpp": 'Node* f(E& e) { return e.call("add.Tensor", {a, b}); }\n',
        "core/partition/r.cpp": '// "silu" in a comment\nbool f(const S& b) {\n'
                                '  return b == "silu"; }\n',
        "core/scheduler/s.cpp": 'const std::set<std::string> kP = {"mm", "bmm"};\n',
        "core/graph/ok.cpp": 'throw Error("expand", where, "only getitem may");\n',
        "core/ops/pointwise/fine.cpp": 'r.add("add.Tensor(Tensor self) -> Tensor");\n',
        "python/stax/x.py": 'if target == "getitem":  # "silu"\n    pass\n',
    }
    expected = ["core/autodiff/e.cpp:1: names the op 'add.Tensor'",
                "core/partition/r.cpp:3: names the op name 'silu'",
                "core/scheduler/s.cpp:1: names the op name 'mm'",
                "core/scheduler/s.cpp:1: names the op name 'bmm'",
                "python/stax/x.py:1: names the op name 'getitem'"]
    with tempfile.TemporaryDirectory() as tmp:
        for rel, text in files.items():
            os.makedirs(os.path.dirname(os.path.join(tmp, rel)), exist_ok=True)
            with open(os.path.join(tmp, rel), "w", encoding="utf-8") as fh:
                fh.write(text)
        problems = check(tmp, full, base)
    out = "\n".join(problems)
    print(out)
    ok = all(e in out for e in expected) and len(problems) == len(expected)
    print("self-test", "passed" if ok else "FAILED: expected exactly\n  " + "\n  ".join(expected))
    return 0 if ok else 1


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--self-test", action="store_true")
    ap.add_argument("--root", default=REPO, help="the repository to scan (default: this one)")
    source = ap.add_mutually_exclusive_group()
    source.add_argument("--stax", help="the stax binary whose `ops --tsv` lists the op names")
    source.add_argument("--ops-tsv", help="a saved `stax ops --tsv` listing")
    args = ap.parse_args()
    if args.self_test:
        return self_test()
    if args.stax:
        tsv = subprocess.run([args.stax, "ops", "--tsv"], check=True, capture_output=True,
                             text=True).stdout
    elif args.ops_tsv:
        tsv = open(args.ops_tsv, encoding="utf-8").read()
    else:
        ap.error("--stax or --ops-tsv is required")
    full, base = op_names(tsv)
    if len(full) < 100:
        print(f"engines_name_no_op: only {len(full)} ops listed; is the registry installed?")
        return 1
    problems = check(args.root, full, base)
    report = problems + [
        f"engines_name_no_op: {len(full)} ops, {len(base)} names; scanned {', '.join(SCANNED)} "
        f"(not {', '.join(SKIPPED)}); {len(ALLOWED)} allowed exception(s):"]
    report += [f"  {f}: {' '.join(sorted(lits))}: {why}" for f, lits, why in ALLOWED]
    report.append(f"engines_name_no_op: {len(problems)} op name(s) outside core/ops" if problems
                  else "engines_name_no_op: ok")
    print("\n".join(report))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
