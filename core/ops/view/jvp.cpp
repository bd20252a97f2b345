// Jvp of the view ops.
#include "core/autodiff/jvp.h"
#include "core/graph/op_registry.h"
#include "core/ops/common/linear_jvp.h"
#include "core/ops/registration.h"

namespace stax {
namespace {

using namespace linear_jvp;  // NOLINT

}  // namespace

void register_view_jvps(JvpTable& t) {
  for (const char* op :
         {"reshape.default", "permute.default", "t.default", "transpose.int", "expand.default",
          "squeeze.default", "squeeze.dim", "squeeze.dims", "unsqueeze.default", "slice.Tensor",
          "select.int", "alias.default", "as_strided.default"})
    t.add(op, linear());

  t.add("view.default", linear("reshape"));

  t.add("_unsafe_view.default", linear("reshape"));

  t.add("_reshape_alias.default", [](JvpContext& c) -> Node* {
    Node* d = c.tangent("self");
    return d ? c.call("reshape", {d, c.arg("size")}) : nullptr;
  });
}

}  // namespace stax
