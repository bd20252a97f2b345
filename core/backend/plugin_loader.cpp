#include "core/backend/plugin_loader.h"

#include <dlfcn.h>
#include <link.h>
#include <sys/stat.h>

#include <boost/dll/shared_library.hpp>

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <cstring>
#include <fstream>
#include <map>
#include <set>

#include "core/backend/elf_check.h"
#include "core/types/dtype.h"
#include "core/support/error.h"
#include "core/support/file_trust.h"

namespace fs = std::filesystem;

namespace stax {

// The C enum and core's DType share the numbering of the first nine dtypes; the later ones map
// through plugin_dtype_code (plugin_api.h).
static_assert(static_cast<int>(DType::Float32) == STAX_DTYPE_FLOAT32);
static_assert(static_cast<int>(DType::Float64) == STAX_DTYPE_FLOAT64);
static_assert(static_cast<int>(DType::Float16) == STAX_DTYPE_FLOAT16);
static_assert(static_cast<int>(DType::BFloat16) == STAX_DTYPE_BFLOAT16);
static_assert(static_cast<int>(DType::Int64) == STAX_DTYPE_INT64);
static_assert(static_cast<int>(DType::Int32) == STAX_DTYPE_INT32);
static_assert(static_cast<int>(DType::Int8) == STAX_DTYPE_INT8);
static_assert(static_cast<int>(DType::UInt8) == STAX_DTYPE_UINT8);
static_assert(static_cast<int>(DType::Bool) == STAX_DTYPE_BOOL);
static_assert(kNumPluginDTypes == STAX_NUM_DTYPES);
static_assert(STAX_DTYPE_INT16 == 9 && STAX_DTYPE_UINT16 == 10 && STAX_DTYPE_UINT32 == 11 &&
              STAX_DTYPE_UINT64 == 12);  // plugin_dtype_code's numbers

namespace {

const char* kStage = "plugin";

std::string version_text(uint32_t major, uint32_t minor) {
  return std::to_string(major) + "." + std::to_string(minor);
}

bool has_elf_header(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  char magic[4] = {0, 0, 0, 0};
  in.read(magic, 4);
  return in && magic[0] == 0x7f && magic[1] == 'E' && magic[2] == 'L' && magic[3] == 'F';
}

// Boost.DLL resets dlerror(); ask the dynamic loader once more for its reason.
std::string dlopen_reason(const fs::path& path) {
  dlerror();
  void* h = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (h) {
    dlclose(h);
    return "";
  }
  const char* e = dlerror();
  return e ? e : "";
}

// The file names of the shared objects in the process (the dynamic loader's list).
std::vector<std::string> loaded_object_names() {
  std::vector<std::string> out;
  dl_iterate_phdr(
      [](struct dl_phdr_info* info, size_t, void* data) {
        if (info->dlpi_name && info->dlpi_name[0])
          static_cast<std::vector<std::string>*>(data)->push_back(info->dlpi_name);
        return 0;
      },
      &out);
  return out;
}

std::string stat_problem(const fs::path& p, TrustKind kind) {
  struct stat st;
  if (::stat(p.c_str(), &st) != 0) return p.string() + ": " + std::strerror(errno);
  TrustRules rules;
  rules.allow_root = true;
  rules.allow_sticky = true;
  std::string why = trust_problem(st, kind, rules);
  return why.empty() ? "" : p.string() + " " + why;
}

}  // namespace

std::string plugin_trust_problem(const fs::path& path) {
  std::error_code ec;
  fs::path real = fs::canonical(path, ec);
  if (ec) return path.string() + ": " + ec.message();
  if (std::string why = stat_problem(real, TrustKind::RegularFile); !why.empty()) return why;
  if (std::string why = stat_problem(real.parent_path(), TrustKind::Directory); !why.empty())
    return why;
  // A path that is (or goes through) a link: whoever can write the directory holding the link
  // decides where it points, so that directory is checked too.
  fs::path link_dir = fs::absolute(path, ec).parent_path();
  if (ec) return "";
  fs::path real_link_dir = fs::canonical(link_dir, ec);
  if (!ec && real_link_dir != real.parent_path())
    if (std::string why = stat_problem(real_link_dir, TrustKind::Directory); !why.empty())
      return why;
  return "";
}

struct PluginLibrary::Impl {
  boost::dll::shared_library lib;
};

std::string plugin_file_name(const std::string& name) { return "libstax_" + name + ".so"; }

fs::path find_plugin(const std::string& name, const std::vector<fs::path>& dirs) {
  std::string file = plugin_file_name(name);
  std::string searched;
  for (const fs::path& d : dirs) {
    std::error_code ec;
    fs::path p = d / file;
    if (fs::is_regular_file(p, ec)) return p;
    searched += "\n  " + d.string();
    if (!fs::is_directory(d, ec)) searched += " (does not exist)";
  }
  if (dirs.empty()) searched = " (the search path is empty)";
  throw Error(kStage, name,
              "plugin '" + name + "' not found: no " + file + " in the plugin path; searched:" +
                  searched);
}

std::vector<fs::path> discover_plugins(const std::vector<fs::path>& dirs) {
  std::map<std::string, fs::path> found;
  for (const fs::path& d : dirs) {
    std::error_code ec;
    if (!fs::is_directory(d, ec)) continue;
    for (const fs::directory_entry& e : fs::directory_iterator(d, ec)) {
      std::string f = e.path().filename().string();
      if (f.rfind("libstax_", 0) != 0 || f.size() < 12 || f.substr(f.size() - 3) != ".so")
        continue;
      std::string name = f.substr(8, f.size() - 11);
      found.emplace(name, e.path());
    }
  }
  std::vector<fs::path> out;
  for (const auto& [n, p] : found) out.push_back(p);
  return out;
}

PluginLibrary::~PluginLibrary() = default;

std::string PluginLibrary::plugin_version() const {
  return api_->plugin_version ? api_->plugin_version : "";
}

std::string PluginLibrary::describe() const {
  return "plugin '" + name_ + "' (" + path_.string() + ")";
}

namespace {

// Step 1 of load: a complete ELF shared object (dlopen of a truncated one dies of SIGBUS), then
// loaded; `loaded` receives the objects the load brought into the process.
void open_shared_object(boost::dll::shared_library& lib, const fs::path& path,
                        const std::string& loc, const std::string& who,
                        std::vector<std::string>& loaded) {
  if (has_elf_header(path)) {
    std::string problem = elf_shared_object_problem(path);
    if (!problem.empty())
      throw Error(kStage, loc, who + ": not a valid shared library: " + problem);
  }
  boost::dll::fs::error_code ec;
  const std::vector<std::string> before = loaded_object_names();
  lib.load(path, boost::dll::load_mode::rtld_now | boost::dll::load_mode::rtld_local, ec);
  if (!ec && lib.is_loaded()) {
    std::set<std::string> had(before.begin(), before.end());
    for (const std::string& o : loaded_object_names())
      if (!had.count(o)) loaded.push_back(o);
  }
  if (ec || !lib.is_loaded()) {
    std::string reason = dlopen_reason(path);
    if (reason.empty()) reason = ec.message();
    if (!has_elf_header(path))
      throw Error(kStage, loc, who + ": not a shared library (" + reason + ")");
    // The dynamic loader's words for an mmap that failed with ENOMEM (an address-space limit,
    // `ulimit -v`, smaller than the plugin and its libraries: ~300 MB for cpu_cpp's LLVM).
    if (reason.find("failed to map segment") != std::string::npos ||
        reason.find("Cannot allocate memory") != std::string::npos)
      reason += " (out of memory: the address space left cannot map the library)";
    throw Error(kStage, loc, who + ": cannot load the shared library: " + reason);
  }
}

// Step 2: the entry point's function table.
const StaxPluginApi* call_entry_point(boost::dll::shared_library& lib, const std::string& loc,
                                      const std::string& who) {
  if (!lib.has(STAX_PLUGIN_ENTRY_POINT))
    throw Error(kStage, loc,
                who + ": missing entry point '" STAX_PLUGIN_ENTRY_POINT
                      "' (a Stax plugin exports it with STAX_DEFINE_PLUGIN)");
  const StaxPluginApi* api = nullptr;
  try {
    auto& entry = lib.get<const StaxPluginApi*()>(STAX_PLUGIN_ENTRY_POINT);
    api = entry();
  } catch (const std::exception& e) {
    throw Error(kStage, loc, who + ": cannot call '" STAX_PLUGIN_ENTRY_POINT "': " + e.what());
  }
  if (!api) throw Error(kStage, loc, who + ": '" STAX_PLUGIN_ENTRY_POINT "' returned no table");
  return api;
}

// Step 3: the version, before anything else in the table is touched. Returns it as text.
std::string check_version(const StaxPluginApi* api, uint32_t required_minor,
                          const std::string& loc, const std::string& who) {
  const std::string host = version_text(STAX_PLUGIN_API_MAJOR, STAX_PLUGIN_API_MINOR);
  const std::string required = version_text(STAX_PLUGIN_API_MAJOR, required_minor);
  if (api->struct_size < offsetof(StaxPluginApi, abi_minor) + sizeof(api->abi_minor))
    throw Error(kStage, loc, who + ": the table is too small to hold a version (struct_size " +
                                 std::to_string(api->struct_size) + ")");
  const std::string theirs = version_text(api->abi_major, api->abi_minor);
  if (api->abi_major != STAX_PLUGIN_API_MAJOR)
    throw Error(kStage, loc,
                who + ": plugin ABI version " + theirs + " is incompatible with the host's " +
                    host + " (major versions differ; rebuild the plugin against this SDK)");
  if (api->abi_minor < required_minor)
    throw Error(kStage, loc,
                who + ": plugin ABI version " + theirs + " is older than the required " + required +
                    " (minor " + std::to_string(api->abi_minor) + " < " +
                    std::to_string(required_minor) + "; rebuild the plugin against this SDK)");
  return theirs;
}

// Step 4: a complete table of that version (`theirs`), naming the right plugin.
void check_table(const StaxPluginApi* api, const std::string& theirs, const std::string& name,
                 const std::string& loc, const std::string& who) {
  if (api->struct_size < offsetof(StaxPluginApi, run_extern) + sizeof(api->run_extern))
    throw Error(kStage, loc, who + ": the function table of ABI " + theirs +
                                 " is truncated (struct_size " + std::to_string(api->struct_size) +
                                 ")");
  struct Fn {
    const char* name;
    bool present;
  };
  const Fn fns[] = {{"error_destroy", api->error_destroy != nullptr},
                    {"error_info", api->error_info != nullptr},
                    {"backend_create", api->backend_create != nullptr},
                    {"backend_destroy", api->backend_destroy != nullptr},
                    {"backend_configure", api->backend_configure != nullptr},
                    {"device_properties", api->device_properties != nullptr},
                    {"realization_thresholds", api->realization_thresholds != nullptr},
                    {"split_reduction", api->split_reduction != nullptr},
                    {"compile", api->compile != nullptr},
                    {"kernel_source", api->kernel_source != nullptr},
                    {"run", api->run != nullptr},
                    {"compiled_kernel_destroy", api->compiled_kernel_destroy != nullptr},
                    {"extern_kernels", api->extern_kernels != nullptr},
                    {"run_extern", api->run_extern != nullptr}};
  for (const Fn& f : fns)
    if (!f.present)
      throw Error(kStage, loc, who + ": the function table lacks '" + std::string(f.name) + "'");
  std::string reported = api->plugin_name ? api->plugin_name : "";
  if (reported != name)
    throw Error(kStage, loc,
                who + ": the library calls itself '" + reported + "' (expected '" + name +
                    "', from the file name " + plugin_file_name(name) + ")");
}

}  // namespace

std::shared_ptr<PluginLibrary> PluginLibrary::load(const fs::path& path, const std::string& name,
                                                   uint32_t required_minor) {
  const std::string loc = path.string();
  const std::string who = "plugin '" + name + "'";
  std::error_code fec;
  if (!fs::exists(path, fec)) throw Error(kStage, loc, who + ": file does not exist");

  std::shared_ptr<PluginLibrary> lib(new PluginLibrary());
  lib->impl_ = std::make_unique<Impl>();
  lib->name_ = name;
  lib->path_ = path;
  lib->real_path_ = fs::canonical(path, fec);
  if (fec) lib->real_path_ = path;

  // 0. trusted: dlopen runs the library's constructors (docs/security.md, "Plugins")
  if (std::string why = plugin_trust_problem(path); !why.empty())
    throw Error(kStage, loc,
                who + ": refusing to load it: " + why +
                    " (a plugin runs with your rights: it must be yours or root's, in a "
                    "directory no one else can write; docs/security.md)");
  open_shared_object(lib->impl_->lib, path, loc, who, lib->loaded_objects_);
  const StaxPluginApi* api = call_entry_point(lib->impl_->lib, loc, who);
  const std::string theirs = check_version(api, required_minor, loc, who);
  check_table(api, theirs, name, loc, who);
  lib->api_ = api;
  return lib;
}

}  // namespace stax
