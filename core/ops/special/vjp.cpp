// Vjp of the special ops.
#include "core/autodiff/jvp.h"
#include "core/autodiff/vjp.h"
#include <cmath>
#include <functional>

#include "core/ops/common/via_decomposition.h"
#include "core/ops/registration.h"

namespace stax {
namespace {

}  // namespace

void register_special_vjps(VjpTable& t) {
  for (const char* op :
         {"special_xlog1py.default", "mvlgamma.default"}) t.add(op, vjp_via_decomposition);
}

}  // namespace stax
