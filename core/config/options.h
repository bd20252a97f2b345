// OptionValue: a backend's options as read from YAML (`devices.<kind>.options`), kept as a small
// tree of scalars (YAML text), lists and maps, each with its file location. The plugin, not
// core, decides what the options mean; core passes the tree across the C boundary
// (plugin_api.h StaxOptions) and the plugin validates it.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace stax {

struct OptionValue {
  enum class Kind { Null, Scalar, List, Map };

  // Declared here, defaulted after the class: `entries` holds pairs of the still incomplete
  // OptionValue, which clang with libstdc++ refuses to destroy inside the class body.
  OptionValue();
  OptionValue(const OptionValue&);
  OptionValue(OptionValue&&) noexcept;
  OptionValue& operator=(const OptionValue&);
  OptionValue& operator=(OptionValue&&) noexcept;
  ~OptionValue();

  Kind kind = Kind::Map;
  std::string scalar;                                        // Scalar: the YAML text
  std::vector<OptionValue> items;                            // List
  std::vector<std::pair<std::string, OptionValue>> entries;  // Map, in document order
  std::string location;                                      // "FILE:LINE:COL", or empty

  static OptionValue map() { return OptionValue(); }
  static OptionValue make_scalar(std::string text, std::string location = "") {
    OptionValue v;
    v.kind = Kind::Scalar;
    v.scalar = std::move(text);
    v.location = std::move(location);
    return v;
  }

  // Map lookup; nullptr when absent or not a map.
  const OptionValue* find(const std::string& key) const {
    if (kind != Kind::Map) return nullptr;
    for (const auto& [k, v] : entries)
      if (k == key) return &v;
    return nullptr;
  }
  // Adds or replaces a map entry (for options set from code or the command line).
  void set(const std::string& key, OptionValue value) {
    kind = Kind::Map;
    for (auto& [k, v] : entries)
      if (k == key) {
        v = std::move(value);
        return;
      }
    entries.emplace_back(key, std::move(value));
  }
  bool empty() const { return kind == Kind::Map ? entries.empty() : kind == Kind::Null; }
};

inline OptionValue::OptionValue() = default;
inline OptionValue::OptionValue(const OptionValue&) = default;
inline OptionValue::OptionValue(OptionValue&&) noexcept = default;
inline OptionValue& OptionValue::operator=(const OptionValue&) = default;
inline OptionValue& OptionValue::operator=(OptionValue&&) noexcept = default;
inline OptionValue::~OptionValue() = default;

}  // namespace stax
