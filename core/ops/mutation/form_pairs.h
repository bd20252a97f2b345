// aten's in-place and out= overloads paired with their functional forms (inplace_forms.def,
// out_forms.def): shared by the schemas (schemas.cpp) and the functionalization rules (rules.cpp).
#pragma once

#include <vector>

namespace stax::mutation {

struct FormPair {
  const char* form;        // "add_.Tensor", "add.out"
  const char* functional;  // "add.Tensor"
  bool out;                // an out= form (writes `out`); else in-place (writes `self`)
};

const std::vector<FormPair>& form_pairs();

// aten's in-place view ops (torch 2.15's schemas) and the functional view each makes:
// transpose_ -> transpose.int ... (swapdims_ / swapaxes_ are transposes too).
struct InplaceViewForm {
  const char* schema;
  const char* functional;
};

const std::vector<InplaceViewForm>& inplace_view_forms();

}  // namespace stax::mutation
