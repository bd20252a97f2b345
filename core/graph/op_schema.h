// Op schemas: the signature of each op overload, parsed from PyTorch-style schema strings such as
//   "add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor"
//   "sum.dim_IntList(Tensor self, int[1]? dim, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor"
// Parameters before '*' are passed positionally in normalized nodes; those after it are kwargs
// (seed §5.1: add.Tensor's alpha=1 appears in kwargs, sum's keepdim=False positionally).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/graph/arg.h"

namespace stax {

enum class ParamType {
  Tensor,      // Tensor
  TensorList,  // Tensor[]   (entries may be None in Tensor?[], e.g. index.Tensor)
  Scalar,      // Scalar     (int, float or bool)
  Int,         // int / SymInt
  IntList,     // int[] / int[N] / SymInt[]  (a single int is accepted for int[1])
  FloatList,   // float[] (upsample_*.vec scale_factors): a list of numbers
  BoolList,    // bool[N] (the *_backward ops' output_mask): a list of bools
  Float,       // float
  Bool,        // bool
  Str,         // str
  ScalarType,  // ScalarType (a dtype)
  Layout,      // Layout / Device / MemoryFormat: accepted and ignored
  Generator,   // Generator?
};

struct ParamSpec {
  std::string name;
  ParamType type = ParamType::Tensor;
  bool optional = false;    // "T?" : None allowed
  bool kwarg_only = false;  // declared after '*'
  // A kwarg-only parameter that a call may also pass positionally, right after the positional
  // ones: the seed's listings pass gelu's `approximate` so (Listing 5.2: `(%matmul, 'none')`),
  // aten declares it after '*'. Bound nodes keep it in kwargs; the Listing 5.2 printer prints it
  // positionally again (docs/aten_compat.md).
  bool positional_compat = false;
  std::optional<Arg> default_value;  // None -> absent default: the param is required
};

struct OpSchema {
  std::string name;      // "add.Tensor"
  std::string base;      // "add"
  std::string overload;  // "Tensor" ("default" when the schema names none)
  std::vector<ParamSpec> params;
  std::string text;      // the schema string as registered (aten's, verbatim)
  std::string returns;   // "Tensor", "(Tensor values, Tensor indices)", "Tensor(a)[]" (as written)

  // Index of the parameter called `param`, or -1.
  int index_of(const std::string& param) const;
  std::string str() const;  // the schema, printed back
};

// Parses one schema string; throws stax::Error("schema", ...) on malformed input (an internal table
// error, caught by the registry's own test).
OpSchema parse_schema(const std::string& text);

}  // namespace stax
