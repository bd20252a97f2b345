// The table of lowering rules (seed §6.2): one entry per op overload, keyed by its canonical name
// ("add.Tensor"), registered in one place per op family (core/ops/<family>/lowering.cpp). A graph
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
  bool empty() const { return rules_.empty(); }

 private:
  std::map<std::string, LoweringEntry, std::less<>> rules_;
};

// The rules of this build: empty until stax::install_ops() (core/ops/install.h) fills it once,
// immutable afterwards. Throws stax::Error (stage "registry") while it is empty.
const LoweringTable& default_lowering_table();
// The same table for filling: only install_ops() writes to it.
LoweringTable& lowering_table_to_fill();

}  // namespace stax
