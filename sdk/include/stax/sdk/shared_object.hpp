// Kernels built by an external compiler into a shared object and dlopen'ed: what a simple
// C-family backend does after printing (examples/out_of_tree_plugin, examples/c99_plugin).
//
//   std::string src = ...;   // with an entry point from c_entry_point() (cstyle_framing.hpp)
//   return compile_shared_object(src, {"cc -std=c99 -O2 -ffp-contract=off -fPIC -shared -I...",
//                                      ".c", "/tmp", "c99"}, kernel);
//
// The source is written to <work_dir>/stax_<plugin>_<pid>_<n>_<kernel><extension>, compiled with
// `<command> <source> -o <so> <link_flags>`, dlopen'ed and deleted (the mapping stays). A compiler
// failure is a STAX_ERROR_COMPILE PluginError with the compiler's output and the source; at run
// time a kernel whose entry point returns a message fails with STAX_ERROR_RUNTIME. POSIX only
// (dlfcn.h): link the plugin with ${CMAKE_DL_LIBS}.
#ifndef STAX_SDK_SHARED_OBJECT_HPP
#define STAX_SDK_SHARED_OBJECT_HPP

#include <dlfcn.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>

#include "stax/sdk/backend.hpp"
#include "stax/sdk/loop_body.hpp"

namespace stax {
namespace sdk {

struct SharedObjectCompiler {
  std::string command;     // the compiler and its flags, up to the source file
  std::string extension;   // of the source file: ".c", ".cpp", ...
  std::string work_dir = "/tmp";
  std::string plugin;      // for file names and messages
  std::string link_flags;  // after `-o <so>`, e.g. "-lm"
};

// A kernel in a dlopen'ed shared object, run through `const char* <kernel>_entry(void* const*)`
// (c_entry_point): null, or the message of the check that failed.
class SharedObjectKernel : public CompiledKernel {
 public:
  SharedObjectKernel(std::string source, void* handle, const Kernel& k, std::string plugin)
      : source_(std::move(source)), handle_(handle), num_buffers_(k.num_buffers()),
        name_(k.name()), plugin_(std::move(plugin)) {
    entry_ = reinterpret_cast<Entry>(dlsym(handle_, (name_ + "_entry").c_str()));
    if (!entry_) {
      dlclose(handle_);
      throw PluginError(STAX_ERROR_COMPILE,
                        plugin_ + ": no entry point " + name_ + "_entry in the shared object");
    }
  }
  ~SharedObjectKernel() override { dlclose(handle_); }
  const std::string& source() const override { return source_; }
  void run(void* const* buffers, size_t n, void*) override {
    if (n != num_buffers_)
      throw PluginError(STAX_ERROR_INVALID_ARGUMENT, plugin_ + ": kernel '" + name_ + "' takes " +
                                                         std::to_string(num_buffers_) +
                                                         " buffers, got " + std::to_string(n));
    if (const char* err = entry_(buffers))
      throw PluginError(STAX_ERROR_RUNTIME, plugin_ + ": kernel '" + name_ + "': " + err);
  }

 private:
  using Entry = const char* (*)(void* const*);
  std::string source_;
  void* handle_;
  size_t num_buffers_;
  std::string name_, plugin_;
  Entry entry_ = nullptr;
};

inline std::unique_ptr<CompiledKernel> compile_shared_object(const std::string& source,
                                                             const SharedObjectCompiler& c,
                                                             const Kernel& k) {
  static std::atomic<int> counter{0};
  std::string base = c.work_dir + "/stax_" + c.plugin + "_" + std::to_string(getpid()) + "_" +
                     std::to_string(counter++) + "_" + k.name();
  std::string src_path = base + c.extension, so_path = base + ".so", log_path = base + ".log";
  if (!(std::ofstream(src_path) << source))
    throw PluginError(STAX_ERROR_COMPILE, c.plugin + ": cannot write " + src_path);
  std::string cmd = c.command + " " + src_path + " -o " + so_path + " " + c.link_flags + " > " +
                    log_path + " 2>&1";
  int rc = std::system(cmd.c_str());
  std::ifstream log_in(log_path);
  std::string log((std::istreambuf_iterator<char>(log_in)), std::istreambuf_iterator<char>());
  std::remove(src_path.c_str());
  std::remove(log_path.c_str());
  if (rc != 0) {
    std::remove(so_path.c_str());
    throw PluginError(STAX_ERROR_COMPILE, c.plugin + ": the compiler failed on kernel '" +
                                              k.name() + "' (" + c.command + "):\n" + log +
                                              "\nsource:\n" + source);
  }
  void* h = dlopen(so_path.c_str(), RTLD_NOW | RTLD_LOCAL);
  std::remove(so_path.c_str());  // stays mapped
  if (!h) throw PluginError(STAX_ERROR_COMPILE, c.plugin + ": dlopen: " + dlerror());
  return std::unique_ptr<CompiledKernel>(new SharedObjectKernel(source, h, k, c.plugin));
}

}  // namespace sdk
}  // namespace stax

#endif  // STAX_SDK_SHARED_OBJECT_HPP
