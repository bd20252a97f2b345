// The table of lowering rules (seed §6.2): one entry per op overload, keyed by its canonical name
// ("add.Tensor"), registered in one place per op family (core/lowering/rules_*.cpp). A graph
// node whose op has no entry becomes a FallbackKernel.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "core/ir/ir.h"

namespace stax {

class GraphLowering;

// Lowers one call_function node to an IR value (a StorageBox, View or ReinterpretView), or
// returns null to decline (the node then becomes a FallbackKernel).
using LoweringRule = std::function<IRPtr(GraphLowering& g, const Node& node)>;

struct LoweringEntry {
  LoweringRule rule;
  // The rule needs its tensor inputs in memory (extern kernels): producers are realized as soon
  // as they are lowered (§6.6 "if some user inevitably requires a value to be materialized").
  bool realizes_inputs = false;
};

class LoweringTable {
 public:
  // Registers a rule; a duplicate name is an internal error (asserts).
  void add(const std::string& op_name, LoweringRule rule, bool realizes_inputs = false);
  const LoweringEntry* find(std::string_view op_name) const;
  std::vector<std::string> names() const;

 private:
  std::map<std::string, LoweringEntry, std::less<>> rules_;
};

// The rules of this build (built once on first use, immutable afterwards).
const LoweringTable& default_lowering_table();

// Registration entry points, one per rule family.
void register_pointwise_rules(LoweringTable& t);  // unary, binary, comparison, where, clamp, casts,
                                                  // gelu / silu and their backward ops
void register_reduction_rules(LoweringTable& t);  // sum prod amax amin mean argmax argmin any all
void register_view_rules(LoweringTable& t);       // view reshape permute t transpose expand ...
void register_indexing_rules(LoweringTable& t);   // gather index_select index.Tensor cat
void register_extern_rules(LoweringTable& t);     // mm bmm matmul addmm
void register_creation_rules(LoweringTable& t);   // full zeros ones *_like arange
void register_nn_rules(LoweringTable& t);         // convolution (rules_nn.cpp)

}  // namespace stax
