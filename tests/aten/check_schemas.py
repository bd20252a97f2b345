"""Every op schema Stax registers (`stax ops --tsv`) against the schema strings of the installed
torch (torch._C._jit_get_all_schemas()): name, overload, argument names, types, defaults and
keyword-only markers must be identical (after aten_schema's normalization; return types are not
compared: Stax keeps aten's return text, e.g. max.dim's "-> (Tensor values, Tensor indices)"). A difference is a failure unless expected_failures.txt
lists it ('schema NAME: reason'); a listed schema that is identical fails too (the list cannot go
stale). Skips cleanly (exit 77) without torch 2.x."""
import sys

import aten_schema
import common

torch = common.import_torch()
stax = common.stax_binary()
aten = {}
for s in torch._C._jit_get_all_schemas():
    if s.name.startswith("aten::"):
        name, params = aten_schema.parse(str(s))
        aten[name] = params
allowed = common.expected_failures("schema")
ops = common.registry(stax)
same, bad, documented = 0, [], []
for name, (_, _, text) in sorted(ops.items()):
    sname, sparams = aten_schema.parse(text)
    if sname != name:
        bad.append("%s: registered as %s" % (name, sname))
        continue
    if name not in aten:
        why = "aten has no op %s" % name
    elif aten[name] != sparams:
        why = "Stax %s vs aten %s" % (aten_schema.describe(sparams), aten_schema.describe(aten[name]))
    else:
        same += 1
        if name in allowed:
            bad.append("%s: identical to aten's, but expected_failures.txt still lists it" % name)
        continue
    (documented if name in allowed else bad).append("%s: %s" % (name, why))
for key in sorted(set(allowed) - set(ops)):
    bad.append("expected_failures.txt lists 'schema %s', which is not registered" % key)
for line in documented:
    print("documented difference: " + line)
for line in bad:
    print("MISMATCH: " + line)
print("%d of %d registered op schemas identical to aten's (torch %s); %d documented "
      "differences; %d unexplained" % (same, len(ops), torch.__version__, len(documented), len(bad)))
sys.exit(1 if bad else 0)
