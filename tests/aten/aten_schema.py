"""Parsing and normalizing op schema strings (aten's and Stax's) so that two spellings of the same
signature compare equal: alias annotations (Tensor(a!)) dropped, SymInt read as int, defaults
compared by value (torch prints ScalarType / MemoryFormat / Layout defaults as enum numbers and
floats at full precision; native_functions.yaml and Stax write long, contiguous_format, 1e-05).
Shared by the schema check and the OpInfo harness (tests/aten/)."""
import re

SCALAR_TYPE_CODES = {
    "uint8": 0, "int8": 1, "int16": 2, "short": 2, "int32": 3, "int": 3, "int64": 4, "long": 4,
    "float16": 5, "half": 5, "float32": 6, "float": 6, "float64": 7, "double": 7, "bool": 11,
    "bfloat16": 15, "uint16": 27, "uint32": 28, "uint64": 29,
}
MEMORY_FORMAT_CODES = {"contiguous_format": 0, "preserve_format": 1, "channels_last": 2,
                       "channels_last_3d": 3}
LAYOUT_CODES = {"strided": 0}


def split_top(text):
    out, depth, cur = [], 0, ""
    for c in text:
        if c in "([":
            depth += 1
        elif c in ")]":
            depth -= 1
        if c == "," and depth == 0:
            out.append(cur.strip())
            cur = ""
        else:
            cur += c
    if cur.strip():
        out.append(cur.strip())
    return out


def norm_type(t):
    t = re.sub(r"\([a-z]!?\)", "", t.strip())  # Tensor(a!) -> Tensor
    t = t.replace("SymInt", "int")
    return t


def norm_default(t, d):
    if d is None:
        return None
    d = d.strip()
    base = t.rstrip("?")
    if d == "None":
        return "None"
    if d in ("True", "False"):
        return d
    if len(d) >= 2 and d[0] in "'\"" and d[-1] == d[0]:
        return "str:" + d[1:-1]
    if base == "ScalarType":
        d = d.replace("torch.", "")
        return "dtype:%s" % (SCALAR_TYPE_CODES.get(d, d))
    if base == "MemoryFormat":
        return "mf:%s" % (MEMORY_FORMAT_CODES.get(d, d))
    if base == "Layout":
        return "layout:%s" % (LAYOUT_CODES.get(d, d))
    if d.startswith("["):
        items = split_top(d[1:-1])
        return "[" + ",".join(str(norm_default(base.split("[")[0], i)) for i in items) + "]"
    try:
        if base in ("float", "Scalar") or re.search(r"[.eE]|inf", d):
            return "num:%r" % float(d)
        return "num:%r" % float(int(d))
    except ValueError:
        return d


def parse(text):
    """-> (name 'base.overload', [(type, name, default, kwarg_only)]) of a schema string."""
    text = text.strip()
    if text.startswith("aten::"):
        text = text[len("aten::"):]
    lp = text.index("(")
    depth, rp = 0, None
    for i in range(lp, len(text)):
        if text[i] == "(":
            depth += 1
        elif text[i] == ")":
            depth -= 1
            if depth == 0:
                rp = i
                break
    name = text[:lp].strip()
    if "." not in name:
        name += ".default"
    params, kw = [], False
    for item in split_top(text[lp + 1:rp]):
        if item == "*":
            kw = True
            continue
        decl, default = (item.split("=", 1) + [None])[:2] if "=" in item else (item, None)
        if " " not in decl.strip():  # an unnamed parameter (a few internal ops)
            decl = decl.strip() + " _"
        ty, pname = decl.strip().rsplit(" ", 1)
        ty = norm_type(ty)
        params.append((ty, pname.strip(), norm_default(ty, default), kw))
    return name, params


def describe(params):
    out, star = [], False
    for ty, name, default, kw in params:
        if kw and not star:
            out.append("*")
            star = True
        out.append("%s %s%s" % (ty, name, "" if default is None else "=" + default))
    return "(" + ", ".join(out) + ")"
