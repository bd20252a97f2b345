// Linear-algebra errors that raise at run time (error_checks.cpp, docs/linalg.md "Errors").
#pragma once

#include <cstdint>
#include <string>

#include "core/graph/graph.h"

namespace stax {
class OpRegistry;
class InterpreterTable;
class VjpTable;
class JvpTable;
}  // namespace stax

namespace stax::linalg {

// torch's message of _linalg_check_errors for LAPACK's `info` of API `api` (batch: the index of
// the first failing matrix, or -1 for a single matrix), e.g. "linalg.inv: The diagonal element 2
// is zero, the inversion could not be completed because the input matrix is singular."
std::string error_message(const std::string& api, int64_t batch, int info);

// Makes `g` raise torch's error when an entry of `info` (int32, one per matrix) is not 0: one
// output of the graph (the smallest) is replaced by _stax_linalg_check(output, info, ...). Does
// nothing on a graph without outputs (the scratch graphs of shape inference).
void add_error_check(Graph& g, Node* info, const std::string& api, bool is_matrix);

void register_check_op(OpRegistry& r);          // _stax_linalg_check
void register_check_kernel(InterpreterTable& t);
void register_check_vjp(VjpTable& t);  // the identity
void register_check_jvp(JvpTable& t);

}  // namespace stax::linalg
