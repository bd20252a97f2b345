#include "core/autodiff/vjp.h"

#include "core/support/error.h"

namespace stax {

Node* VjpContext::in(std::string_view param) const {
  const Arg& a = node_->arg(param);
  return a.is_node() ? a.node() : nullptr;
}

void VjpContext::give(Node* n, Node* grad) {
  if (!grad || !needs(n)) return;
  given_.emplace_back(n, grad);
}

void VjpTable::add(const std::string& op, VjpFn fn) {
  if (!rules_.emplace(op, std::move(fn)).second)
    throw Error("autodiff", op, "duplicate VJP rule for op " + op);
}

const VjpFn* VjpTable::find(std::string_view op) const {
  auto it = rules_.find(op);
  return it == rules_.end() ? nullptr : &it->second;
}

void VjpTable::extend(const std::string& op, const std::function<VjpFn(VjpFn)>& wrap,
                      VjpFn absent) {
  auto it = rules_.find(op);
  if (it == rules_.end())
    rules_.emplace(op, wrap(std::move(absent)));
  else
    it->second = wrap(std::move(it->second));
}

std::vector<std::string> VjpTable::names() const {
  std::vector<std::string> out;
  for (const auto& [k, v] : rules_) out.push_back(k);
  return out;
}

namespace {
VjpTable& vjp_storage() {
  static VjpTable table;
  return table;
}
}  // namespace

const VjpTable& default_vjp_table() {
  const VjpTable& t = vjp_storage();
  if (t.empty()) throw_ops_not_installed("VJP table");
  return t;
}

VjpTable& vjp_table_to_fill() { return vjp_storage(); }

}  // namespace stax
