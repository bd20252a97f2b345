"""The Core ATen opset (issue 29 item 1): every overload the installed torch 2.x tags
`torch.Tag.core` (189 in torch 2.15) must be registered by Stax (`stax ops --tsv`) with its schema
byte-identical to torch's own printout (str(op._schema), less the "aten::" namespace). Fails on any
op missing or differing, unless expected_failures.txt lists it as 'core NAME: reason'; a listed op
that is now registered with the right schema fails too, so the list cannot go stale. Skips cleanly
(exit 77) without torch 2.x."""
import sys

import common

torch = common.import_torch()
if not hasattr(torch, "Tag") or not hasattr(torch.Tag, "core"):
    common.skip("torch %s has no torch.Tag.core (the Core ATen opset is torch 2.x's)"
                % torch.__version__)

core = {}  # "abs.default" -> "abs(Tensor self) -> Tensor"
for packet_name in dir(torch.ops.aten):
    try:
        packet = getattr(torch.ops.aten, packet_name)
        overloads = packet.overloads()
    except Exception:  # noqa: BLE001 (attributes of the namespace that are not op packets)
        continue
    for overload in overloads:
        op = getattr(packet, overload)
        if torch.Tag.core in op.tags:
            text = str(op._schema)
            core["%s.%s" % (packet_name, overload)] = text[len("aten::"):] if text.startswith(
                "aten::") else text
if not core:
    sys.exit("torch %s tags no op torch.Tag.core: cannot check the opset" % torch.__version__)

ops = common.registry(common.stax_binary())
allowed = common.expected_failures("core")
same, bad, documented = 0, [], []
for name, text in sorted(core.items()):
    if name not in ops:
        why = "not registered (aten: %s)" % text
    elif ops[name][2] != text:
        why = "schema differs: Stax %r vs aten %r" % (ops[name][2], text)
    else:
        same += 1
        if name in allowed:
            bad.append("%s: listed in expected_failures.txt but registered with aten's schema "
                       "(remove the line)" % name)
        continue
    (documented if name in allowed else bad).append("%s: %s" % (name, why))
for key in sorted(set(allowed) - set(core)):
    bad.append("expected_failures.txt lists 'core %s', which torch %s does not tag core"
               % (key, torch.__version__))
for line in documented:
    print("documented gap: " + line)
for line in bad:
    print("FAIL: " + line)
print("Core ATen (torch %s): %d of %d overloads registered with byte-identical schemas; "
      "%d documented gaps; %d unexplained" % (torch.__version__, same, len(core), len(documented),
                                             len(bad)))
sys.exit(1 if bad else 0)
