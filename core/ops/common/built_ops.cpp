#include "core/ops/common/built_ops.h"

#include "core/autodiff/jvp.h"
#include "core/autodiff/vjp.h"
#include "core/interpreter/interpreter.h"
#include "core/ops/common/kernel_utils.h"
#include "core/ops/common/via_decomposition.h"

namespace stax {

namespace {

std::string name_of(const BuiltOp& op) { return parse_schema(op.schema).name; }

}  // namespace

void add_built_ops(OpRegistry& r, const std::vector<BuiltOp>& ops) {
  for (const BuiltOp& op : ops) {
    OpDef& d = r.add(op.schema, OpCategory::Composite, Promotion::None, infer_by_building(op.build));
    d.differentiable = op.differentiable;
    d.complex = op.complex;
  }
}

void add_built_decompositions(DecompositionTable& t, const std::vector<BuiltOp>& ops) {
  for (const BuiltOp& op : ops) t.add(name_of(op), decomposition_by_building(op.build));
}

void add_built_kernels(InterpreterTable& t, const std::vector<BuiltOp>& ops) {
  for (const BuiltOp& op : ops) t.add(name_of(op), kernels::run_decomposition);
}

void add_built_vjps(VjpTable& t, const std::vector<BuiltOp>& ops) {
  for (const BuiltOp& op : ops)
    if (op.differentiable) t.add(name_of(op), vjp_via_decomposition);
}

void add_built_jvps(JvpTable& t, const std::vector<BuiltOp>& ops) {
  for (const BuiltOp& op : ops)
    if (op.differentiable) t.add(name_of(op), jvp_via_decomposition);
}

}  // namespace stax
