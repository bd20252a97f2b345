// Extending an entry of an engine table (op registry, interpreter kernels, VJP / JVP rules) that
// an earlier op family filled: how core/ops/complex/ adds complex forms to ops of other families.
// Only install_ops() calls these, while it fills the tables (after every family), as it calls the
// families' registration functions. The tables hand entries out through `find` as const; the
// entries themselves are not const objects (each table owns them in a std::map or unique_ptr),
// so writing through them here is defined. (A table method `extend` is the cleaner form; adding
// it to the engines' headers would rebuild most of the tree, so it waits for a quiet moment:
// docs/complex.md.)
#pragma once

#include <functional>
#include <string>

#include "core/graph/op_registry.h"
#include "core/support/error.h"

namespace stax::complex_ops {

// The registered op `name`, for changing its definition (OpDef::complex, its inference).
inline OpDef& op_to_extend(OpRegistry& r, const std::string& name) {
  const OpDef* d = r.find(name);
  if (!d) throw Error("registry", name, "no op " + name + " to extend with complex forms");
  return const_cast<OpDef&>(*d);  // NOLINT: see the file comment
}

// Replaces table entry `name` by wrap(entry); an op without an entry gets wrap(fallback).
template <class Table, class Fn>
void extend_entry(Table& t, const std::string& name, const std::function<Fn(Fn)>& wrap,
                  Fn fallback) {
  if (const Fn* f = t.find(name)) {
    Fn& entry = const_cast<Fn&>(*f);  // NOLINT: see the file comment
    entry = wrap(std::move(entry));
  } else {
    t.add(name, wrap(std::move(fallback)));
  }
}

}  // namespace stax::complex_ops
