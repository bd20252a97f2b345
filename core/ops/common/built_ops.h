// Ops defined by one builder each (core/ops/common/infer_by_building.h), registered as a table:
// a Composite op whose inference and decomposition come from its builder, whose interpreter
// kernel runs the decomposition and whose VJP / JVP go through it. A family file lists its
// BuiltOps and fills each engine table with one call.
#pragma once

#include <string>
#include <vector>

#include "core/ops/common/infer_by_building.h"

namespace stax {

class InterpreterTable;
class JvpTable;
class VjpTable;

struct BuiltOp {
  const char* schema;  // aten's schema
  BuildFn build;
  bool differentiable = true;
  bool complex = false;  // takes complex tensors (OpDef::complex)
};

void add_built_ops(OpRegistry& r, const std::vector<BuiltOp>& ops);
void add_built_decompositions(DecompositionTable& t, const std::vector<BuiltOp>& ops);
void add_built_kernels(InterpreterTable& t, const std::vector<BuiltOp>& ops);
void add_built_vjps(VjpTable& t, const std::vector<BuiltOp>& ops);  // differentiable ones
void add_built_jvps(JvpTable& t, const std::vector<BuiltOp>& ops);

}  // namespace stax
