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

}  // namespace stax::mutation
