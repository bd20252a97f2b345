// cpu_cpp_jit.so's one exported symbol: ClangJit behind the table of jit_library.h. Every entry
// catches what ClangJit throws: no exception crosses the table.
#include <exception>
#include <new>

#include "plugins/cpu_cpp/clang_jit.h"
#include "plugins/cpu_cpp/jit_library.h"

namespace stax::cpu {
namespace {

template <class Fn>
bool guarded(StaxErrorCode* code, std::string* error, Fn&& fn) {
  try {
    fn();
    return true;
  } catch (const sdk::PluginError& e) {
    *code = e.code();
    *error = e.what();
  } catch (const std::bad_alloc&) {
    *code = STAX_ERROR_RUNTIME;  // as the SDK's boundary says it (sdk/plugin.hpp)
    *error = "cpu_cpp jit: out of memory";
  } catch (const std::exception& e) {
    *code = STAX_ERROR_INTERNAL;
    *error = std::string("cpu_cpp jit: ") + e.what();
  }
  return false;
}

void* create(const ClangJitOptions& options, StaxErrorCode* code, std::string* error) {
  ClangJit* jit = nullptr;
  guarded(code, error, [&] { jit = new ClangJit(options); });
  return jit;
}

void destroy(void* jit) { delete static_cast<ClangJit*>(jit); }

void* compile(void* jit, std::string_view source, const std::string& symbol,
              const std::string& name, StaxErrorCode* code, std::string* error) {
  CompiledModule* out = nullptr;
  guarded(code, error, [&] {
    out = new CompiledModule(static_cast<ClangJit*>(jit)->compile(source, {symbol}, name));
  });
  return out;
}

bool load_objects(void* jit, const std::vector<std::string_view>& objects,
                  const std::string& symbol, const std::vector<std::string>& names,
                  std::vector<void*>* modules, StaxErrorCode* code, std::string* error) {
  modules->clear();
  return guarded(code, error, [&] {
    std::vector<ClangJit::ObjectToLoad> list;
    for (size_t i = 0; i < objects.size(); ++i)
      list.push_back({objects[i], {symbol}, i < names.size() ? names[i] : std::string()});
    std::vector<CompiledModule> loaded = static_cast<ClangJit*>(jit)->load_objects(list);
    for (CompiledModule& m : loaded) modules->push_back(new CompiledModule(std::move(m)));
  });
}

std::string identity(void* jit) { return static_cast<ClangJit*>(jit)->identity(); }

void* module_symbol(void* module) {
  const auto& symbols = static_cast<CompiledModule*>(module)->symbols();
  return symbols.empty() ? nullptr : symbols.front().second;
}

const std::string& module_object(void* module) {
  return static_cast<CompiledModule*>(module)->object();
}

void free_module(void* module) { delete static_cast<CompiledModule*>(module); }

const JitLibraryApi kApi = {sizeof(JitLibraryApi), create,        destroy,       compile,
                            load_objects,          identity,      module_symbol, module_object,
                            free_module};

}  // namespace
}  // namespace stax::cpu

extern "C" __attribute__((visibility("default"))) const stax::cpu::JitLibraryApi*
stax_cpu_jit_api() {
  return &stax::cpu::kApi;
}
