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

}  // namespace stax::mutation
