#!/usr/bin/env python3
"""The layering check of core/ (ctest `layering`; the table: cmake/CoreModules.cmake).

Reads every #include "core/<m>/..." of every file under core/<module>/ and fails, naming file,
line and the offending module, when <m> is neither <module> nor one of its declared (transitive)
dependencies. Also fails when a module other than those in STAX_CORE_PLUGIN_ABI_MODULES includes
the plugin ABI ("stax/plugin_api.h", "stax/sdk/backend.hpp", "stax/sdk/plugin.hpp"), and when a
file outside core/ops names an op family's registration function (register_<family>_...; the
families are the folders of core/ops): the engines own empty tables, stax_ops fills them
(docs/DECISIONS.md item 39).

  check_layering.py [--root DIR]   check DIR/core against DIR/cmake/CoreModules.cmake (default:
                                   the repository this script lives in)
  check_layering.py --self-test    must-fail test: a copy of the table with a back-edge and an ABI
                                   include in a temporary tree must be reported
"""
import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile

PLUGIN_ABI_HEADERS = {"stax/plugin_api.h", "stax/sdk/backend.hpp", "stax/sdk/plugin.hpp"}
INCLUDE = re.compile(r'^\s*#\s*include\s*"([^"]+)"')


def read_table(path):
    """(modules in order, {module: direct deps}, modules allowed the plugin ABI) from the table."""
    text = open(path, encoding="utf-8").read()
    m = re.search(r"set\(STAX_CORE_MODULES\s+([^)]*)\)", text)
    modules = m.group(1).split()
    deps = {mod: [] for mod in modules}
    for name, body in re.findall(r"set\(STAX_CORE_DEPS_(\w+)\s*([^)]*)\)", text):
        if name not in deps:
            raise SystemExit(f"{path}: dependencies of unknown module '{name}'")
        deps[name] = body.split()
    for mod, ds in deps.items():
        for d in ds:
            if d not in deps:
                raise SystemExit(f"{path}: module '{mod}' depends on unknown module '{d}'")
    abi = re.search(r"set\(STAX_CORE_PLUGIN_ABI_MODULES\s+([^)]*)\)", text).group(1).split()
    return modules, deps, set(abi)


def closure(deps):
    """{module: every module it may use, itself included}; raises on a cycle."""
    result = {}

    def visit(mod, stack):
        if mod in result:
            return result[mod]
        if mod in stack:
            raise SystemExit("layering table has a cycle: " + " -> ".join(stack + [mod]))
        allowed = {mod}
        for d in deps[mod]:
            allowed |= visit(d, stack + [mod])
        result[mod] = allowed
        return allowed

    for mod in deps:
        visit(mod, [])
    return result


def op_families(core):
    """The op families: the folders of core/ops (common/ holds shared helpers, not a family)."""
    ops = os.path.join(core, "ops")
    if not os.path.isdir(ops):
        return []
    return sorted(d for d in os.listdir(ops)
                  if os.path.isdir(os.path.join(ops, d)) and d != "common")


def check(root):
    """The violations under root/core, as 'file:line: message' strings."""
    modules, deps, abi_modules = read_table(os.path.join(root, "cmake", "CoreModules.cmake"))
    allowed = closure(deps)
    core = os.path.join(root, "core")
    problems = []
    families = op_families(core)
    family_fn = re.compile(r"\bregister_(%s)_\w+" % "|".join(map(re.escape, families))) \
        if families else None
    for entry in sorted(os.listdir(core)):
        mod_dir = os.path.join(core, entry)
        if not os.path.isdir(mod_dir):
            continue
        if entry not in deps:
            problems.append(f"core/{entry}: a folder that is not a module of "
                            "cmake/CoreModules.cmake")
            continue
        for dirpath, _, files in os.walk(mod_dir):
            for f in sorted(files):
                if not f.endswith((".h", ".hpp", ".cpp", ".def", ".inc")):
                    continue
                path = os.path.join(dirpath, f)
                rel = os.path.relpath(path, root)
                with open(path, encoding="utf-8") as fh:
                    for lineno, line in enumerate(fh, 1):
                        if family_fn and entry != "ops":
                            f = family_fn.search(line)
                            if f:
                                problems.append(
                                    f"{rel}:{lineno}: module '{entry}' names the op family "
                                    f"'{f.group(1)}' ({f.group(0)}): only core/ops fills the "
                                    "engines' tables")
                        m = INCLUDE.match(line)
                        if not m:
                            continue
                        inc = m.group(1)
                        parts = inc.split("/")
                        if parts[0] == "core" and len(parts) > 2:
                            used = parts[1]
                            if used not in deps:
                                problems.append(f"{rel}:{lineno}: includes \"{inc}\": '{used}' "
                                                "is not a module of cmake/CoreModules.cmake")
                            elif used not in allowed[entry]:
                                problems.append(
                                    f"{rel}:{lineno}: module '{entry}' includes \"{inc}\" of "
                                    f"module '{used}', which is not among its dependencies "
                                    f"({' '.join(sorted(allowed[entry] - {entry})) or 'none'})")
                        elif inc in PLUGIN_ABI_HEADERS and entry not in abi_modules:
                            problems.append(
                                f"{rel}:{lineno}: module '{entry}' includes the plugin ABI "
                                f"\"{inc}\" (only {' and '.join(sorted(abi_modules))} may)")
    return problems


def self_test():
    """A tree with a back-edge (graph -> driver) and an ABI include (ir) must fail, naming both."""
    here = os.path.dirname(os.path.abspath(__file__))
    repo = os.path.dirname(os.path.dirname(here))
    with tempfile.TemporaryDirectory() as tmp:
        os.makedirs(os.path.join(tmp, "cmake"))
        shutil.copy(os.path.join(repo, "cmake", "CoreModules.cmake"), os.path.join(tmp, "cmake"))
        for mod, name, text in [
            ("graph", "bad.h", '#pragma once\n#include "core/support/error.h"\n'
                               '#include "core/driver/compiler.h"\n'),
            ("ir", "bad.cpp", '#include "stax/sdk/ops.def"\n#include "stax/plugin_api.h"\n'),
            ("driver", "good.cpp", '#include "core/graph/graph.h"\n#include "core/runtime/x.h"\n'),
            ("ops/pointwise", "schemas.cpp", 'void register_pointwise_ops();\n'),
            ("interpreter", "table.cpp", 'void f() { register_pointwise_kernels(t); }\n'),
        ]:
            os.makedirs(os.path.join(tmp, "core", mod), exist_ok=True)
            with open(os.path.join(tmp, "core", mod, name), "w", encoding="utf-8") as fh:
                fh.write(text)
        run = subprocess.run([sys.executable, os.path.abspath(__file__), "--root", tmp],
                             capture_output=True, text=True)
        out = run.stdout + run.stderr
        expected = ["core/graph/bad.h:3: module 'graph' includes \"core/driver/compiler.h\" of "
                    "module 'driver'",
                    "core/ir/bad.cpp:2: module 'ir' includes the plugin ABI \"stax/plugin_api.h\"",
                    "core/interpreter/table.cpp:1: module 'interpreter' names the op family "
                    "'pointwise'"]
        ok = run.returncode != 0 and all(e in out for e in expected) and "good.cpp" not in out \
            and "ops.def" not in out
        print(out)
        print("self-test", "passed" if ok else "FAILED: expected exit != 0 and\n  " +
              "\n  ".join(expected))
        return 0 if ok else 1


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--root", default=os.path.dirname(os.path.dirname(os.path.dirname(
        os.path.abspath(__file__)))))
    ap.add_argument("--self-test", action="store_true")
    args = ap.parse_args()
    if args.self_test:
        return self_test()
    problems = check(args.root)
    for p in problems:
        print(p)
    if problems:
        print(f"layering: {len(problems)} violation(s) of cmake/CoreModules.cmake")
        return 1
    print("layering: ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
