#include "core/ops/mutation/form_pairs.h"

namespace stax::mutation {

const std::vector<FormPair>& form_pairs() {
  static const std::vector<FormPair> pairs = {
#define STAX_INPLACE_FORM(form, functional) {form, functional, false},
#include "core/ops/mutation/inplace_forms.def"
#undef STAX_INPLACE_FORM
#define STAX_OUT_FORM(form, functional) {form, functional, true},
#include "core/ops/mutation/out_forms.def"
#undef STAX_OUT_FORM
  };
  return pairs;
}

const std::vector<InplaceViewForm>& inplace_view_forms() {
  static const std::vector<InplaceViewForm> forms = {
      {"transpose_(Tensor(a!) self, int dim0, int dim1) -> Tensor(a!)", "transpose.int"},
      {"swapdims_(Tensor(a!) self, int dim0, int dim1) -> Tensor(a!)", "transpose.int"},
      {"swapaxes_(Tensor(a!) self, int axis0, int axis1) -> Tensor(a!)", "transpose.int"},
      {"t_(Tensor(a!) self) -> Tensor(a!)", "t.default"},
      {"squeeze_(Tensor(a!) self) -> Tensor(a!)", "squeeze.default"},
      {"squeeze_.dim(Tensor(a!) self, int dim) -> Tensor(a!)", "squeeze.dim"},
      {"squeeze_.dims(Tensor(a!) self, int[] dim) -> Tensor(a!)", "squeeze.dims"},
      {"unsqueeze_(Tensor(a!) self, int dim) -> Tensor(a!)", "unsqueeze.default"},
  };
  return forms;
}

}  // namespace stax::mutation
