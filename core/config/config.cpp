#include "core/config/config.h"

#include <algorithm>

#include <yaml-cpp/yaml.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "core/support/error.h"
#include "stax/sdk/types.hpp"

namespace fs = std::filesystem;

namespace stax {

namespace {

const char* kStage = "config";

// Reads one YAML document into typed fields, with FILE:LINE:COL on every error.
class Reader {
 public:
  Reader(std::string source, fs::path base_dir)
      : source_(std::move(source)), base_dir_(std::move(base_dir)) {}

  std::string loc(const YAML::Node& n) const { return loc(n.Mark()); }
  std::string loc(const YAML::Mark& m) const {
    if (m.is_null()) return source_;
    return source_ + ":" + std::to_string(m.line + 1) + ":" + std::to_string(m.column + 1);
  }
  [[noreturn]] void fail(const YAML::Node& n, const std::string& msg) const {
    throw Error(kStage, loc(n), msg);
  }

  static std::string kind_name(const YAML::Node& n) {
    switch (n.Type()) {
      case YAML::NodeType::Null: return "null";
      case YAML::NodeType::Scalar: return "a scalar";
      case YAML::NodeType::Sequence: return "a list";
      case YAML::NodeType::Map: return "a map";
      default: return "undefined";
    }
  }

  // Checks that `n` is a map whose keys are all in `known`; `path` names it in messages.
  // any_key: only the map check (keys are checked by the caller).
  void expect_map(const YAML::Node& n, const std::string& path,
                  const std::vector<std::string>& known, bool any_key = false) const {
    if (!n.IsMap())
      fail(n, (path.empty() ? std::string("the top level") : "'" + path + "'") +
                  " must be a map, got " + kind_name(n));
    if (any_key) return;
    for (auto it = n.begin(); it != n.end(); ++it) {
      std::string key = it->first.Scalar();
      bool ok = false;
      for (const std::string& k : known) ok = ok || k == key;
      if (ok) continue;
      std::string list;
      for (const std::string& k : known) list += (list.empty() ? "" : ", ") + k;
      std::string where = path.empty() ? "at the top level" : "in '" + path + "'";
      fail(it->first, "unknown key '" + key + "' " + where + " (expected one of: " + list + ")");
    }
  }

  std::string scalar(const YAML::Node& n, const std::string& path) const {
    if (!n.IsScalar()) fail(n, "'" + path + "' must be a string, got " + kind_name(n));
    return n.Scalar();
  }

  int integer(const YAML::Node& n, const std::string& path) const {
    std::string s = n.IsScalar() ? n.Scalar() : "";
    try {
      if (!n.IsScalar()) throw YAML::BadConversion(n.Mark());
      int v = n.as<int>();
      if (v < 0) fail(n, "'" + path + "' must be a nonnegative integer, got " + s);
      return v;
    } catch (const YAML::BadConversion&) {
      fail(n, "'" + path + "' must be an integer, got " +
                  (n.IsScalar() ? "'" + s + "'" : kind_name(n)));
    }
  }

  std::vector<std::string> string_list(const YAML::Node& n, const std::string& path,
                                       bool allow_scalar) const {
    std::vector<std::string> out;
    if (allow_scalar && n.IsScalar()) return {n.Scalar()};
    if (!n.IsSequence()) fail(n, "'" + path + "' must be a list of strings, got " + kind_name(n));
    for (size_t i = 0; i < n.size(); ++i)
      out.push_back(scalar(n[i], path + "[" + std::to_string(i) + "]"));
    return out;
  }

  OptionValue option(const YAML::Node& n) const {
    OptionValue v;
    v.location = loc(n);
    switch (n.Type()) {
      case YAML::NodeType::Scalar:
        v.kind = OptionValue::Kind::Scalar;
        v.scalar = n.Scalar();
        break;
      case YAML::NodeType::Sequence:
        v.kind = OptionValue::Kind::List;
        for (const YAML::Node& item : n) v.items.push_back(option(item));
        break;
      case YAML::NodeType::Map:
        v.kind = OptionValue::Kind::Map;
        for (auto it = n.begin(); it != n.end(); ++it)
          v.entries.emplace_back(it->first.Scalar(), option(it->second));
        break;
      default: v.kind = OptionValue::Kind::Null; break;
    }
    return v;
  }

  static fs::path expand_home(const std::string& p) {
    if (p == "~" || p.rfind("~/", 0) == 0) {
      const char* home = std::getenv("HOME");
      if (home) return fs::path(home) / p.substr(p.size() > 1 ? 2 : 1);
    }
    return fs::path(p);
  }

  // plugin_path: see config.h for the resolution rule.
  std::vector<fs::path> plugin_dirs(const std::vector<std::string>& entries) const {
    std::vector<fs::path> out;
    auto push = [&](const fs::path& p) {
      fs::path n = p.lexically_normal();
      for (const fs::path& q : out)
        if (q == n) return;
      out.push_back(n);
    };
    fs::path build_dir = default_plugin_dir().parent_path();
    for (const std::string& e : entries) {
      fs::path p = expand_home(e);
      if (p.is_absolute()) {
        push(p);
        continue;
      }
      push(fs::absolute(base_dir_ / p));
#ifdef STAX_SOURCE_DIR
      push(fs::path(STAX_SOURCE_DIR) / p);
#endif
      push(build_dir / p);
    }
    // The build tree's plugins/ comes last, even when an entry above already named it.
    fs::path def = default_plugin_dir().lexically_normal();
    out.erase(std::remove(out.begin(), out.end(), def), out.end());
    out.push_back(def);
    return out;
  }

  fs::path resolve(const std::string& p) const {
    fs::path x = expand_home(p);
    return x.is_absolute() ? x : fs::absolute(base_dir_ / x).lexically_normal();
  }

  Config read(const YAML::Node& root) const {
    Config c;
    c.source = source_;
    if (root.IsNull()) {  // an empty file: all defaults
      c.plugin_path = plugin_dirs({});
      return c;
    }
    expect_map(root, "",
               {"plugin_path", "devices", "realization", "cache_dir", "dump", "default_device"});

    std::vector<std::string> pp;
    if (root["plugin_path"]) pp = string_list(root["plugin_path"], "plugin_path", true);
    c.plugin_path = plugin_dirs(pp);

    if (const YAML::Node devs = root["devices"]) {
      if (!devs.IsNull()) {
        expect_map(devs, "devices", {}, /*any_key=*/true);
        for (auto it = devs.begin(); it != devs.end(); ++it) {
          std::string kind = it->first.Scalar();
          // Device kinds are open (a plugin names its own: cpu, cuda, npu, ...): a name
          // routes graphs whose tensors live on device "<kind>" or "<kind>:<index>".
          if (!is_device_kind_name(kind))
            fail(it->first, "device name '" + kind +
                                "' in 'devices' must be a lowercase identifier [a-z][a-z0-9_]* "
                                "(the device kind a backend drives, e.g. cpu, cuda, npu)");
          std::string path = "devices." + kind;
          const YAML::Node& d = it->second;
          expect_map(d, path, {"backend", "options"});
          DeviceConfig dc;
          dc.location = loc(it->first);
          if (!d["backend"]) fail(it->first, "missing key 'backend' in '" + path + "'");
          dc.backend = scalar(d["backend"], path + ".backend");
          if (dc.backend.empty()) fail(d["backend"], "'" + path + ".backend' is empty");
          if (const YAML::Node o = d["options"]) {
            if (!o.IsNull() && !o.IsMap())
              fail(o, "'" + path + ".options' must be a map, got " + kind_name(o));
            if (o.IsMap()) dc.options = option(o);
            dc.options.location = loc(o);
          }
          c.devices[kind] = std::move(dc);
        }
      }
    }

    if (const YAML::Node dd = root["default_device"]) {
      if (!dd.IsNull()) {
        c.default_device = scalar(dd, "default_device");
        if (!c.devices.count(c.default_device))
          fail(dd, "'default_device' names '" + c.default_device +
                       "', which is not a key of 'devices'");
      }
    }

    if (const YAML::Node r = root["realization"]) {
      if (!r.IsNull()) {
        expect_map(r, "realization",
                   {"op_limit", "users_limit", "users_near_op_limit", "max_reads",
                    "max_accumulated_reads", "transcendental"});
        auto set = [&](const char* key, std::optional<int>& field) {
          if (r[key]) field = integer(r[key], std::string("realization.") + key);
        };
        set("op_limit", c.realization.op_limit);
        set("users_limit", c.realization.users_limit);
        set("users_near_op_limit", c.realization.users_near_op_limit);
        set("max_reads", c.realization.max_reads);
        set("max_accumulated_reads", c.realization.max_accumulated_reads);
        if (const YAML::Node t = r["transcendental"]) {
          std::vector<std::string> ops = string_list(t, "realization.transcendental", false);
          for (size_t i = 0; i < ops.size(); ++i) {
            int32_t op = sdk::opcode_from_name(ops[i]);
            if (op < STAX_OP_FIRST_OPS_DEF)
              fail(t[i], "'realization.transcendental' names an unknown op '" + ops[i] + "'");
          }
          c.realization.transcendental = ops;
        }
      }
    }

    if (const YAML::Node cd = root["cache_dir"]) {
      if (!cd.IsNull()) c.cache_dir = resolve(scalar(cd, "cache_dir"));
    }

    if (const YAML::Node d = root["dump"]) {
      if (!d.IsNull()) {
        expect_map(d, "dump", {"dir", "stages"});
        if (const YAML::Node dir = d["dir"]) {
          if (!dir.IsNull()) c.dump.dir = resolve(scalar(dir, "dump.dir"));
        }
        if (const YAML::Node st = d["stages"]) {
          std::vector<std::string> stages = string_list(st, "dump.stages", false);
          const auto& all = DumpConfig::all_stages();
          for (size_t i = 0; i < stages.size(); ++i) {
            bool ok = false;
            for (const std::string& s : all) ok = ok || s == stages[i];
            if (!ok)
              fail(st[i], "unknown dump stage '" + stages[i] +
                              "' (expected one of: graph, joint, partition, loop_ir, kernels)");
          }
          c.dump.stages = stages;
        } else {
          c.dump.stages = DumpConfig::all_stages();
        }
      }
    }
    return c;
  }

 private:
  std::string source_;
  fs::path base_dir_;
};

}  // namespace

fs::path default_plugin_dir() {
#ifdef STAX_DEFAULT_PLUGIN_DIR
  return fs::path(STAX_DEFAULT_PLUGIN_DIR);
#else
  return fs::path("plugins");
#endif
}

const std::vector<std::string>& DumpConfig::all_stages() {
  static const std::vector<std::string> stages = {"graph",   "joint",    "partition",
                                                  "loop_ir", "schedule", "kernels"};
  return stages;
}

bool DumpConfig::wants(const std::string& stage) const {
  for (const std::string& s : stages)
    if (s == stage) return true;
  return false;
}

Config Config::parse(const std::string& yaml_text, const std::string& source_name,
                     const fs::path& base_dir) {
  Reader reader(source_name, base_dir);
  YAML::Node root;
  try {
    root = YAML::Load(yaml_text);
  } catch (const YAML::ParserException& e) {
    throw Error(kStage, reader.loc(e.mark), "YAML syntax error: " + e.msg);
  }
  try {
    return reader.read(root);
  } catch (const YAML::Exception& e) {  // anything the checks above did not anticipate
    throw Error(kStage, reader.loc(e.mark), e.msg);
  }
}

Config Config::load(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) {
    std::error_code ec;
    bool exists = fs::exists(file, ec);
    throw Error(kStage, file.string(),
                exists ? "cannot read the config file" : "config file not found");
  }
  std::ostringstream text;
  text << in.rdbuf();
  fs::path base = fs::absolute(file).parent_path();
  return parse(text.str(), file.string(), base);
}

Config Config::default_cpu() {
  Config c;
  c.plugin_path = {default_plugin_dir()};
  DeviceConfig cpu;
  cpu.backend = "cpu_cpp";
  cpu.location = "<default>";
  c.devices["cpu"] = std::move(cpu);
  return c;
}

const DeviceConfig* Config::device(const std::string& kind) const {
  auto it = devices.find(kind);
  return it == devices.end() ? nullptr : &it->second;
}

bool is_device_kind_name(const std::string& name) {
  if (name.empty() || name[0] < 'a' || name[0] > 'z') return false;
  for (char c : name)
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_')) return false;
  return true;
}

}  // namespace stax
