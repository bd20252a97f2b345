// Interpreter kernels of the view ops: the result shares its input's storage (Tensor::as_strided)
// with the layout view_layout() computes from the runtime tensor's sizes, strides and offset, the
// same arithmetic shape inference used, so a result's strides equal its node's TensorMeta strides.
//
// reshape returns a view when one exists and otherwise a fresh row-major copy (like torch).
// as_strided's storage_offset is absolute in the storage (torch semantics); when None the input's
// own offset is kept. clone always copies; contiguous returns its input when it is already
// row-major contiguous (sharing storage) and a copy otherwise.
#include "core/ops/view/layout.h"
#include "core/interpreter/interpreter.h"
#include "core/ops/registration.h"

namespace stax {

namespace {

Tensor view_kernel(const KernelContext& ctx) {
  const Tensor& in = ctx.tensor("self");
  ViewCall call{[&ctx](std::string_view p) -> const Arg& { return ctx.arg(p); },
                [&ctx](const std::string& m) { ctx.fail(m); }};
  StridedLayout l = view_layout(ctx.node().target(),
                                {in.sizes(), in.strides(), in.storage_offset(), false}, call);
  if (l.copy) return in.clone().as_strided(l.sizes, l.strides, 0);
  try {
    return in.as_strided(l.sizes, l.strides, l.offset);
  } catch (const Error& e) {
    ctx.fail(e.message());
  }
}

}  // namespace

void register_view_kernels(InterpreterTable& t) {
  for (const char* op :
       {"view.default", "_unsafe_view.default", "reshape.default", "permute.default", "t.default",
        "transpose.int", "expand.default", "squeeze.default", "squeeze.dim", "squeeze.dims",
        "unsqueeze.default", "slice.Tensor", "select.int", "as_strided.default", "alias.default",
        "_reshape_alias.default", "detach.default"})
    t.add(op, view_kernel);
  for (const char* op : {"clone.default", "lift_fresh_copy.default"})
    t.add(op, [](const KernelContext& ctx) { return ctx.tensor("self").clone(); });
  t.add("contiguous.default",
        [](const KernelContext& ctx) { return ctx.tensor("self").contiguous(); });
}

}  // namespace stax
