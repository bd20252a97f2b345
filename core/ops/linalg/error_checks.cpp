// Linear-algebra errors that raise (docs/linalg.md, "Errors"). torch.linalg.inv / solve /
// cholesky / lu_factor ... trace as their `*_ex` form (which returns LAPACK's `info`) followed by
// `_linalg_check_errors(info, api_name, is_matrix)`, an op with no result that raises when an info
// entry is not 0. A Stax graph has no effects without a result, so the check expands to
//
//   _stax_linalg_check(out, info, api_name, is_matrix) -> out
//
// put in place of one of the graph's outputs (the one with the fewest elements; not one whose size
// is known only at run time, which no op may read): that output now
// depends on the check, so the interpreter and every compiled graph (a counted fallback) run it
// before returning, and it raises torch's message (batch element included) instead of returning
// the inf / nan of a singular solve. The `*_ex` forms with check_errors=True expand to the same
// check. The check passes its input through: its VJP and JVP are the identity.
#include <algorithm>
#include <string>

#include "core/autodiff/jvp.h"
#include "core/autodiff/vjp.h"
#include "core/graph/op_registry.h"
#include "core/interpreter/interpreter.h"
#include "core/ops/linalg/error_checks.h"
#include "core/support/error.h"

namespace stax {

namespace linalg {

std::string error_message(const std::string& api, int64_t batch, int info) {
  const std::string where = api + (batch >= 0 ? ": (Batch element " + std::to_string(batch) + ")"
                                              : std::string());
  const std::string code = std::to_string(info);
  auto has = [&](const char* s) { return api.find(s) != std::string::npos; };
  if (info < 0) {
    if (has("svd") && info == -4)
      return where + ": The algorithm failed to converge because the input matrix contained "
                     "non-finite values.";
    return where + ": Argument " + std::to_string(-info) + " has illegal value. Most certainly "
                   "there is a bug in the implementation calling the backend library.";
  }
  if (has("inv"))
    return where + ": The diagonal element " + code + " is zero, the inversion could not be "
                   "completed because the input matrix is singular.";
  if (has("solve")) return where + ": The solver failed because the input matrix is singular.";
  if (has("cholesky"))
    return where + ": The factorization could not be completed because the input is not "
                   "positive-definite (the leading minor of order " + code +
           " is not positive-definite).";
  if (has("svd"))
    return where + ": The algorithm failed to converge because the input matrix is "
                   "ill-conditioned or has too many repeated singular values (error code: " +
           code + ").";
  if (has("eig") || has("syevd"))
    return where + ": The algorithm failed to converge because the input matrix is "
                   "ill-conditioned or has too many repeated eigenvalues (error code: " +
           code + ").";
  if (has("lstsq"))
    return where + ": The least squares solution could not be computed because the input matrix "
                   "does not have full rank (error code: " + code + ").";
  if (has("lu_factor"))
    return where + ": U[" + code + "," + code + "] is zero and using it on lu_solve would result "
                   "in a division by zero. If you still want to perform the factorization, "
                   "consider calling linalg.lu(A, pivot) or linalg.lu_factor_ex(A, pivot)";
  return api + ": Unknown error code: " + code + ".";
}

void add_error_check(Graph& g, Node* info, const std::string& api, bool is_matrix) {
  if (!g.output_node()) return;  // a scratch graph of shape inference: nothing runs
  const std::vector<Node*> values = g.outputs();
  size_t pick = values.size();
  for (size_t i = 0; i < values.size(); ++i)
    if (values[i] && !values[i]->meta().runtime_sized() &&
        (pick == values.size() || values[i]->meta().numel() < values[pick]->meta().numel()))
      pick = i;
  if (pick == values.size())  // nothing of a static size is returned
    throw Error("expand", "%" + info->name(),
                api + ": the graph returns no value of a static size to carry the error check");
  Node* saved = g.insert_point();
  g.set_insert_point(nullptr);  // after every value the outputs read
  std::vector<Node*> outs = values;
  outs[pick] = g.call("_stax_linalg_check", {values[pick], info, api, is_matrix});
  g.set_insert_point(saved);
  // The outputs anew (the graphs expanded are clones, whose writes of inputs are already marked
  // updates: the marks are kept as they are).
  g.output(std::move(outs), g.output_updates());
}

}  // namespace linalg

namespace {

TensorMeta check_rule(const CallArgs& c) {
  const TensorMeta& info = c.tensor("info");
  if (info.dtype != DType::Int32)
    c.fail("_linalg_check_errors: info must be an int32 tensor, got " +
           std::string(dtype_name(info.dtype)));
  return c.tensor("self");
}

Tensor check_kernel(const KernelContext& c) {
  Tensor info = c.tensor("info").contiguous();
  const int32_t* p = info.data<int32_t>();
  const int32_t* bad = std::find_if(p, p + info.numel(), [](int32_t x) { return x != 0; });
  if (bad != p + info.numel()) {
    bool matrix = c.arg("is_matrix").to_bool();
    throw Error("linalg", "%" + c.node().name(),
                linalg::error_message(c.arg("api_name").str(), matrix ? -1 : bad - p, *bad));
  }
  return c.tensor("self").clone();  // a value of its own (a compiled graph may reuse the input's)
}

}  // namespace

namespace linalg {

void register_check_op(OpRegistry& r) {
  r.add("_stax_linalg_check(Tensor self, Tensor info, str api_name, bool is_matrix) -> Tensor",
        OpCategory::Extern, Promotion::None, check_rule);
}

void register_check_kernel(InterpreterTable& t) {
  t.add("_stax_linalg_check.default", check_kernel);
}

void register_check_vjp(VjpTable& t) {
  t.add("_stax_linalg_check.default", [](VjpContext& c) {
    if (c.needs(c.in("self"))) c.give(c.in("self"), c.grad());
  });
}

void register_check_jvp(JvpTable& t) {
  t.add("_stax_linalg_check.default", [](JvpContext& c) { return c.tangent("self"); });
}

}  // namespace linalg

}  // namespace stax
