// ExternalCompiler: the baseline of bench_jit_compile. Writes a source to a fresh temporary
// directory, runs `c++ <flags> -shared -fPIC` on it and dlopens the result. Benchmarks only.
#pragma once

#include <dlfcn.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace stax::bench {

class ExternalCompiler {
 public:
  // A dlopen'ed library in its own temporary directory; both go away with it.
  class Library {
   public:
    Library(void* handle, std::filesystem::path dir) : handle_(handle), dir_(std::move(dir)) {}
    Library(const Library&) = delete;
    Library& operator=(const Library&) = delete;
    ~Library() {
      if (handle_) dlclose(handle_);
      std::error_code ignored;
      std::filesystem::remove_all(dir_, ignored);
    }
    void* symbol(const std::string& name) const {
      void* addr = dlsym(handle_, name.c_str());
      if (!addr) throw std::runtime_error("ExternalCompiler: no symbol " + name);
      return addr;
    }

   private:
    void* handle_;
    std::filesystem::path dir_;
  };

  explicit ExternalCompiler(std::string compiler = "c++",
                            std::vector<std::string> flags = {"-O3", "-march=native",
                                                              "-fno-math-errno",
                                                              "-ffp-contract=off"})
      : compiler_(std::move(compiler)), flags_(std::move(flags)) {}

  std::string command_line() const {
    std::string cmd = compiler_;
    for (const std::string& f : flags_) cmd += " " + f;
    return cmd + " -shared -fPIC";
  }

  std::unique_ptr<Library> compile(const std::string& source) const {
    std::string pattern = (std::filesystem::temp_directory_path() / "stax_ext_XXXXXX").string();
    if (!mkdtemp(pattern.data())) throw std::runtime_error("ExternalCompiler: mkdtemp failed");
    const std::filesystem::path dir = pattern;
    const std::filesystem::path src = dir / "kernel.cpp", lib = dir / "kernel.so";
    const std::filesystem::path log = dir / "log.txt";
    std::ofstream(src) << source;
    const std::string cmd = command_line() + " -o '" + lib.string() + "' '" + src.string() +
                            "' > '" + log.string() + "' 2>&1";
    const int rc = std::system(cmd.c_str());
    void* handle = rc == 0 ? dlopen(lib.c_str(), RTLD_NOW | RTLD_LOCAL) : nullptr;
    if (!handle) {
      std::stringstream text;
      text << std::ifstream(log).rdbuf();
      std::error_code ignored;
      std::filesystem::remove_all(dir, ignored);
      throw std::runtime_error("ExternalCompiler: `" + cmd + "` failed (rc " + std::to_string(rc) +
                               "):\n" + text.str());
    }
    return std::make_unique<Library>(handle, dir);
  }

 private:
  std::string compiler_;
  std::vector<std::string> flags_;
};

}  // namespace stax::bench
