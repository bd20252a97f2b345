// A read-only view over StaxOptions (the backend's YAML subtree, plugin_api.h) with typed getters
// whose errors name the YAML location: "cpu.yaml:7:5: option 'opt_level' of backend 'cpu_cpp'
// must be an integer, got 'fast'". Errors are PluginError(STAX_ERROR_INVALID_OPTION).
//
//   void configure(const Options& o) override {
//     o.check_known({"opt_level", "threads"});          // unknown keys are errors
//     opt_level_ = o.get_int("opt_level", 3);          // default when absent
//   }
#ifndef STAX_SDK_OPTIONS_HPP
#define STAX_SDK_OPTIONS_HPP

#include <cerrno>
#include <cstdlib>
#include <initializer_list>
#include <string>
#include <vector>

#include "stax/sdk/types.hpp"

namespace stax {
namespace sdk {

// A value from the config as an error message shows it: quoted, control characters as '?', cut
// to 64 characters with its length when longer, so a huge value never makes a huge message.
inline std::string option_excerpt(const std::string& s) {
  const size_t max_chars = 64;
  const bool cut = s.size() > max_chars;
  std::string out = "'";
  for (size_t i = 0; i < s.size() && i < max_chars; ++i)
    out += (static_cast<unsigned char>(s[i]) < 0x20 || s[i] == 0x7f) ? '?' : s[i];
  out += cut ? "...' (" + std::to_string(s.size()) + " bytes)" : "'";
  return out;
}

class OptionNode {
 public:
  OptionNode(const StaxOptions* options, int32_t index, std::string path, std::string backend)
      : o_(options), i_(index), path_(std::move(path)), backend_(std::move(backend)) {}

  StaxOptionKind kind() const { return static_cast<StaxOptionKind>(node().kind); }
  bool is_null() const { return kind() == STAX_OPTION_NULL; }
  bool is_scalar() const { return kind() == STAX_OPTION_SCALAR; }
  bool is_list() const { return kind() == STAX_OPTION_LIST; }
  bool is_map() const { return kind() == STAX_OPTION_MAP; }
  std::string key() const { return node().key ? node().key : ""; }
  std::string text() const { return node().value ? node().value : ""; }
  std::string location() const { return node().location ? node().location : ""; }
  const std::string& path() const { return path_; }  // "nvrtc.flags" (dotted, from the root)

  std::vector<OptionNode> children() const {
    std::vector<OptionNode> out;
    for (size_t j = static_cast<size_t>(i_) + 1; j < o_->num_nodes; ++j) {
      if (o_->nodes[j].parent != i_) continue;
      std::string p = path_;
      const char* k = o_->nodes[j].key;
      if (k) p = p.empty() ? k : p + "." + k;
      else p += "[" + std::to_string(out.size()) + "]";
      out.emplace_back(o_, static_cast<int32_t>(j), p, backend_);
    }
    return out;
  }
  // The child with this key (maps only); false when absent.
  bool find(const std::string& k, OptionNode* out) const {
    if (!is_map()) return false;
    for (const OptionNode& c : children())
      if (c.key() == k) {
        *out = c;
        return true;
      }
    return false;
  }

  std::string as_string() const {
    if (!is_scalar()) fail("must be a scalar");
    return text();
  }
  int64_t as_int() const {
    std::string s = as_string();
    errno = 0;
    char* end = nullptr;
    long long v = std::strtoll(s.c_str(), &end, 0);
    if (s.empty() || *end || errno) fail("must be an integer, got " + option_excerpt(s));
    return v;
  }
  double as_double() const {
    std::string s = as_string();
    errno = 0;
    char* end = nullptr;
    double v = std::strtod(s.c_str(), &end);
    if (s.empty() || *end || errno) fail("must be a number, got " + option_excerpt(s));
    return v;
  }
  bool as_bool() const {
    std::string s = as_string();
    if (s == "true" || s == "True" || s == "yes" || s == "on" || s == "1") return true;
    if (s == "false" || s == "False" || s == "no" || s == "off" || s == "0") return false;
    fail("must be true or false, got " + option_excerpt(s));
    return false;
  }
  std::vector<std::string> as_string_list() const {
    if (!is_list()) fail("must be a list");
    std::vector<std::string> out;
    for (const OptionNode& c : children()) out.push_back(c.as_string());
    return out;
  }

  // Throws PluginError(INVALID_OPTION): "LOC: option 'PATH' of backend 'B' WHAT".
  [[noreturn]] void fail(const std::string& what) const {
    std::string loc = location();
    throw PluginError(STAX_ERROR_INVALID_OPTION, (loc.empty() ? "" : loc + ": ") + "option '" +
                                                     path_ + "' of backend '" + backend_ + "' " +
                                                     what);
  }

 private:
  const StaxOptionNode& node() const { return o_->nodes[i_]; }

  const StaxOptions* o_;
  int32_t i_;
  std::string path_;
  std::string backend_;
};

class Options {
 public:
  // An empty option map when `options` is null or has no nodes.
  Options(const StaxOptions* options, std::string backend_name)
      : backend_(std::move(backend_name)) {
    if (options && options->nodes && options->num_nodes > 0) o_ = options;
    else o_ = empty_options();
  }

  const std::string& backend_name() const { return backend_; }
  OptionNode root() const { return OptionNode(o_, 0, "", backend_); }
  bool empty() const { return root().children().empty(); }
  bool has(const std::string& key) const {
    OptionNode n = root();
    return root().find(key, &n);
  }
  OptionNode at(const std::string& key) const {
    OptionNode n = root();
    if (!root().find(key, &n)) throw PluginError(STAX_ERROR_INVALID_OPTION,
                                                 "missing option '" + key + "' of backend '" +
                                                     backend_ + "'");
    return n;
  }

  // Unknown top-level keys are errors naming the key, its location and the known ones.
  void check_known(std::initializer_list<const char*> known) const {
    OptionNode r = root();
    if (!r.is_map()) r.fail("must be a map");
    for (const OptionNode& c : r.children()) {
      bool ok = false;
      for (const char* k : known) ok = ok || c.key() == k;
      if (ok) continue;
      std::string list;
      for (const char* k : known) list += (list.empty() ? "" : ", ") + std::string(k);
      std::string loc = c.location();
      throw PluginError(STAX_ERROR_INVALID_OPTION,
                        (loc.empty() ? "" : loc + ": ") + "unknown option " +
                            option_excerpt(c.key()) + " for backend '" + backend_ +
                            "' (known options: " +
                            (list.empty() ? "none" : list) + ")");
    }
  }

  std::string get_string(const std::string& key, const std::string& def) const {
    return has(key) ? at(key).as_string() : def;
  }
  int64_t get_int(const std::string& key, int64_t def) const {
    return has(key) ? at(key).as_int() : def;
  }
  double get_double(const std::string& key, double def) const {
    return has(key) ? at(key).as_double() : def;
  }
  bool get_bool(const std::string& key, bool def) const {
    return has(key) ? at(key).as_bool() : def;
  }
  std::vector<std::string> get_string_list(const std::string& key,
                                           std::vector<std::string> def) const {
    return has(key) ? at(key).as_string_list() : def;
  }

 private:
  static const StaxOptions* empty_options() {
    static const StaxOptionNode root = {STAX_OPTION_MAP, -1, nullptr, nullptr, nullptr};
    static const StaxOptions empty = {sizeof(StaxOptions), &root, 1};
    return &empty;
  }
  const StaxOptions* o_;
  std::string backend_;
};

}  // namespace sdk
}  // namespace stax

#endif  // STAX_SDK_OPTIONS_HPP
