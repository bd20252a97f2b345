#include "core/config/config.h"

#include <algorithm>

#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/yaml.h>

#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>

#include "core/support/error.h"
#include "core/support/quoted.h"
#include "core/support/user_dirs.h"
#include "stax/sdk/types.hpp"

namespace fs = std::filesystem;

namespace stax {

namespace {

const char* kStage = "config";

// Limits on what one options tree may expand to. yaml-cpp shares the node of an alias with its
// anchor, so `&a {x: *a}` is a cycle and nested aliases ("billion laughs") expand exponentially;
// both are cut here with an error instead of a stack overflow or bad_alloc.
constexpr int kMaxOptionDepth = 64;
constexpr size_t kMaxOptionValues = 100000;

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
    check_unique_keys(n, path);
    if (any_key) return;
    for (auto it = n.begin(); it != n.end(); ++it) {
      std::string key = it->first.Scalar();
      bool ok = false;
      for (const std::string& k : known) ok = ok || k == key;
      if (ok) continue;
      std::string list;
      for (const std::string& k : known) list += (list.empty() ? "" : ", ") + k;
      std::string where = path.empty() ? "at the top level" : "in '" + path + "'";
      fail(it->first, "unknown key " + quote_excerpt(key) + " " + where + " (expected one of: " + list + ")");
    }
  }

  // yaml-cpp keeps both entries of a repeated key and lookups see only the first: reject it.
  void check_unique_keys(const YAML::Node& n, const std::string& path) const {
    std::set<std::string> seen;
    for (auto it = n.begin(); it != n.end(); ++it) {
      std::string key = it->first.IsScalar() ? it->first.Scalar() : "";
      if (!seen.insert(key).second)
        fail(it->first, "duplicate key " + quote_excerpt(key) + " " +
                            (path.empty() ? std::string("at the top level") : "in '" + path + "'"));
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
      if (v < 0) fail(n, "'" + path + "' must be a nonnegative integer, got " + excerpt(s));
      return v;
    } catch (const YAML::BadConversion&) {
      fail(n, "'" + path + "' must be an integer, got " +
                  (n.IsScalar() ? quote_excerpt(s) : kind_name(n)));
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

  // The options subtree `n` at nesting `depth`; `count` is the number of values read so far.
  OptionValue option(const YAML::Node& n, const std::string& path, int depth,
                     size_t& count) const {
    if (depth > kMaxOptionDepth)
      fail(n, quote_excerpt(path, 200) + " nests deeper than " + std::to_string(kMaxOptionDepth) +
                  " levels (a recursive alias?)");
    if (++count > kMaxOptionValues)
      fail(n, quote_excerpt(path, 200) + " expands to more than " + std::to_string(kMaxOptionValues) +
                  " values (nested aliases?)");
    OptionValue v;
    v.location = loc(n);
    switch (n.Type()) {
      case YAML::NodeType::Scalar:
        v.kind = OptionValue::Kind::Scalar;
        v.scalar = n.Scalar();
        break;
      case YAML::NodeType::Sequence:
        v.kind = OptionValue::Kind::List;
        for (size_t i = 0; i < n.size(); ++i)
          v.items.push_back(option(n[i], path + "[" + std::to_string(i) + "]", depth + 1, count));
        break;
      case YAML::NodeType::Map:
        v.kind = OptionValue::Kind::Map;
        check_unique_keys(n, path);
        for (auto it = n.begin(); it != n.end(); ++it) {
          std::string key = scalar(it->first, path + " key");
          v.entries.emplace_back(key, option(it->second, path + "." + key, depth + 1, count));
        }
        break;
      default: v.kind = OptionValue::Kind::Null; break;
    }
    return v;
  }

  static bool is_number(const YAML::Node& n) {
    try {
      n.as<double>();
      return true;
    } catch (const YAML::BadConversion&) {
      return false;
    }
  }
  static bool is_bool(const YAML::Node& n) {
    try {
      n.as<bool>();
      return true;
    } catch (const YAML::BadConversion&) {
      return false;
    }
  }

  // `~` and `~/...`: $HOME, else the passwd database's home (core/support/user_dirs.h); an
  // error at the entry's place when there is neither.
  fs::path expand_home(const std::string& p, const std::string& where) const {
    return stax::expand_home(p, kStage, where);
  }

  // The directories one plugin_path entry may name, in search order (config.h).
  std::vector<fs::path> candidates(const std::string& entry, const std::string& where) const {
    fs::path p = expand_home(entry, where);
    if (p.is_absolute()) return {p};
    std::vector<fs::path> out{fs::absolute(base_dir_ / p)};
#ifdef STAX_SOURCE_DIR
    out.push_back(fs::path(STAX_SOURCE_DIR) / p);
#endif
    out.push_back(default_plugin_dir().parent_path() / p);
    return out;
  }

  // plugin_path: see config.h for the resolution rule.
  // plugin_path's directories and, for each, why it is searched (Config::plugin_path_origin).
  void plugin_dirs(const std::vector<std::string>& entries, const std::vector<std::string>& wheres,
                   Config& c) const {
    std::vector<fs::path>& out = c.plugin_path;
    std::vector<std::string>& why = c.plugin_path_origin;
    out.clear();
    why.clear();
    auto push = [&](const fs::path& p, const std::string& origin) {
      fs::path n = p.lexically_normal();
      for (const fs::path& q : out)
        if (q == n) return;
      out.push_back(n);
      why.push_back(origin);
    };
    for (size_t i = 0; i < entries.size(); ++i) {
      std::vector<fs::path> cands = candidates(entries[i], wheres[i]);
      const char* kinds[] = {"relative to the config's directory", "relative to the source tree",
                             "relative to the build tree"};
      for (size_t k = 0; k < cands.size(); ++k)
        push(cands[k], "plugin_path[" + std::to_string(i) + "] " + quote_excerpt(entries[i], 200) + " (" +
                           wheres[i] + ")" +
                           (cands.size() == 1 ? std::string() : std::string(", ") + kinds[k]));
    }
    // The build tree's plugins/ comes last, even when an entry above already named it.
    fs::path def = default_plugin_dir().lexically_normal();
    for (size_t i = 0; i < out.size(); ++i)
      if (out[i] == def) {
        out.erase(out.begin() + static_cast<std::ptrdiff_t>(i));
        why.erase(why.begin() + static_cast<std::ptrdiff_t>(i));
        break;
      }
    out.push_back(def);
    why.push_back("built in: this build's plugin directory, always searched last");
  }

  fs::path resolve(const std::string& p, const std::string& where) const {
    fs::path x = expand_home(p, where);
    return x.is_absolute() ? x : fs::absolute(base_dir_ / x).lexically_normal();
  }

  Config read(const YAML::Node& root) const {
    Config c;
    c.source = source_;
    if (root.IsNull()) {  // an empty file: all defaults
      plugin_dirs({}, {}, c);
      return c;
    }
    expect_map(root, "",
               {"plugin_path", "devices", "realization", "cache_dir", "dump", "default_device",
                "cache"});
    read_plugin_path(root, c);
    read_devices(root, c);
    read_default_device(root, c);
    read_realization(root, c);
    read_cache(root, c);
    read_dump(root, c);
    return c;
  }

  // plugin_path: every entry a directory that exists (relative to the file, ~ expanded); fills
  // Config::plugin_path and, for each directory, why it is searched (plugin_path_origin).
  void read_plugin_path(const YAML::Node& root, Config& c) const {
    std::vector<std::string> pp, pp_where;
    if (const YAML::Node ppn = root["plugin_path"]) {
      pp = string_list(ppn, "plugin_path", true);
      for (size_t i = 0; i < pp.size(); ++i) {
        const YAML::Node e = ppn.IsScalar() ? ppn : ppn[i];
        pp_where.push_back(loc(e));
        if (e.Tag() == "?" && (is_number(e) || is_bool(e)))
          fail(e, "'plugin_path' entries must be directory names, got " + quote_excerpt(pp[i]));
        std::vector<fs::path> tried = candidates(pp[i], loc(e));
        bool found = false;
        std::error_code ec;
        for (const fs::path& d : tried) found = found || fs::is_directory(d, ec);
        if (!found) {
          std::string list;
          for (const fs::path& d : tried) list += (list.empty() ? "" : ", ") + excerpt(d.string(), 200);
          fail(e, "'plugin_path' entry " + quote_excerpt(pp[i]) + " is not a directory (tried: " + list + ")");
        }
      }
    }
    plugin_dirs(pp, pp_where, c);
  }

  // devices: kind -> {backend, options}.
  void read_devices(const YAML::Node& root, Config& c) const {
    if (const YAML::Node devs = root["devices"]) {
      if (!devs.IsNull()) {
        expect_map(devs, "devices", {}, /*any_key=*/true);
        for (auto it = devs.begin(); it != devs.end(); ++it) {
          std::string kind = it->first.Scalar();
          // Device kinds are open (a plugin names its own: cpu, cuda, npu, ...): a name
          // routes graphs whose tensors live on device "<kind>" or "<kind>:<index>".
          if (!is_device_kind_name(kind))
            fail(it->first, "device name " + quote_excerpt(kind) +
                                " in 'devices' must be a lowercase identifier [a-z][a-z0-9_]* "
                                "(the device kind a backend drives, e.g. cpu, cuda, npu)");
          std::string path = "devices." + kind;
          const YAML::Node d = it->second;  // a copy: `it->second` names a temporary
          expect_map(d, path, {"backend", "options"});
          DeviceConfig dc;
          dc.location = loc(it->first);
          if (!d["backend"]) fail(it->first, "missing key 'backend' in '" + path + "'");
          dc.backend = scalar(d["backend"], path + ".backend");
          if (dc.backend.empty()) fail(d["backend"], "'" + path + ".backend' is empty");
          if (const YAML::Node o = d["options"]) {
            if (!o.IsNull() && !o.IsMap())
              fail(o, "'" + path + ".options' must be a map, got " + kind_name(o));
            size_t count = 0;
            if (o.IsMap()) dc.options = option(o, path + ".options", 0, count);
            dc.options.location = loc(o);
          }
          c.devices[kind] = std::move(dc);
        }
      }
    }
  }

  void read_default_device(const YAML::Node& root, Config& c) const {
    if (const YAML::Node dd = root["default_device"]) {
      if (!dd.IsNull()) {
        c.default_device = scalar(dd, "default_device");
        if (!c.devices.count(c.default_device))
          fail(dd, "'default_device' names " + quote_excerpt(c.default_device) +
                       ", which is not a key of 'devices'");
      }
    }
  }

  // realization: the thresholds of seed §6.6 a config may override.
  void read_realization(const YAML::Node& root, Config& c) const {
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
              fail(t[i], "'realization.transcendental' names an unknown op " + quote_excerpt(ops[i]));
          }
          c.realization.transcendental = ops;
        }
      }
    }
  }

  // cache_dir and cache (on / off): the persistent kernel cache.
  void read_cache(const YAML::Node& root, Config& c) const {
    if (const YAML::Node cd = root["cache_dir"]) {
      if (!cd.IsNull()) {
        const std::string v = scalar(cd, "cache_dir");
        if (v == "default") {
          std::optional<fs::path> base = user_cache_directory();
          if (!base)
            fail(cd, "'cache_dir: default' needs a home directory: XDG_CACHE_HOME and HOME are "
                     "unset (or not absolute paths) and the passwd database has none for this "
                     "user; name a directory instead");
          c.cache_dir = *base / "stax";
        } else {
          c.cache_dir = resolve(v, loc(cd));
        }
        // Something other than a directory is a mistake in the file; a directory this process
        // cannot write (a read-only home) is not: the kernel cache warns once and compiles
        // without its disk level (core/cache/disk_cache.h).
        std::error_code ec;
        if (fs::exists(*c.cache_dir, ec) && !fs::is_directory(*c.cache_dir, ec))
          fail(cd, "'cache_dir' " + excerpt(c.cache_dir->string(), 200) + " is not a directory");
      }
    }

    if (const YAML::Node cn = root["cache"]) {
      bool on = true;
      if (!cn.IsScalar() || !YAML::convert<bool>::decode(cn, on))
        fail(cn, "'cache' must be on or off");
      c.cache = on;
    }
  }

  // dump: the directory and the stages Compiler::compile dumps.
  void read_dump(const YAML::Node& root, Config& c) const {
    if (const YAML::Node d = root["dump"]) {
      if (!d.IsNull()) {
        expect_map(d, "dump", {"dir", "stages"});
        if (const YAML::Node dir = d["dir"]) {
          if (!dir.IsNull()) c.dump.dir = resolve(scalar(dir, "dump.dir"), loc(dir));
        }
        if (const YAML::Node st = d["stages"]) {
          std::vector<std::string> stages = string_list(st, "dump.stages", false);
          const auto& all = DumpConfig::all_stages();
          for (size_t i = 0; i < stages.size(); ++i) {
            bool ok = false;
            for (const std::string& s : all) ok = ok || s == stages[i];
            if (!ok)
              fail(st[i], "unknown dump stage " + quote_excerpt(stages[i]) +
                              " (expected one of: graph, joint, partition, loop_ir, kernels)");
          }
          c.dump.stages = stages;
        } else {
          c.dump.stages = DumpConfig::all_stages();
        }
      }
    }
  }

 private:
  std::string source_;
  fs::path base_dir_;
};

// Counts the documents a YAML::Parser reports, and where the second one starts.
class DocumentCounter : public YAML::EventHandler {
 public:
  int documents = 0;
  YAML::Mark second_start = YAML::Mark::null_mark();

  void OnDocumentStart(const YAML::Mark& mark) override {
    if (++documents == 2) second_start = mark;
  }
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark&, YAML::anchor_t) override {}
  void OnAlias(const YAML::Mark&, YAML::anchor_t) override {}
  void OnScalar(const YAML::Mark&, const std::string&, YAML::anchor_t,
                const std::string&) override {}
  void OnSequenceStart(const YAML::Mark&, const std::string&, YAML::anchor_t,
                       YAML::EmitterStyle::value) override {}
  void OnSequenceEnd() override {}
  void OnMapStart(const YAML::Mark&, const std::string&, YAML::anchor_t,
                  YAML::EmitterStyle::value) override {}
  void OnMapEnd() override {}
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
    // A second document would be ignored silently. Counted with at most two parser calls:
    // YAML::LoadAll loops forever on some inputs (yaml-cpp 0.7, e.g. ",`"; found by fuzzing).
    std::istringstream in(yaml_text);
    YAML::Parser parser(in);
    DocumentCounter counter;
    for (int i = 0; i < 2 && parser.HandleNextDocument(counter); ++i) {
    }
    if (counter.documents > 1)
      throw Error(kStage, reader.loc(counter.second_start),
                  "the file holds more than one YAML document; a config is one document");
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
  std::error_code dir_ec;
  if (fs::is_directory(file, dir_ec))
    throw Error(kStage, file.string(), "is a directory, not a config file");
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
  c.plugin_path_origin = {"built in: this build's plugin directory (no config file)"};
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
