// Ahead-of-time cuda_triton compiles without a device: a run fails on the missing driver before
// any kernel waits for its cubin (the device-resident run opens a stream first), so a run cannot
// show a failed compile. The kernel cache can: a kernel is stored only after serialize() has
// waited for its cubin, and Compiler::compile stores a graph's kernels before it returns. So a
// Compiler on a fresh cache directory waits for every compile, and the stored entries (each with
// an ELF cubin) count the compiles that succeeded. Used by cuda_triton_test and the fuzz slice.
#pragma once

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace stax::test {

class CubinCache {
 public:
  explicit CubinCache(const std::string& what)
      : dir_(std::filesystem::temp_directory_path() /
             ("stax_cubins_" + what + "_" + std::to_string(::getpid()))) {
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    // ctest runs every test with STAX_CACHE_DIR=off, which would override the config's cache_dir
    if (const char* e = std::getenv("STAX_CACHE_DIR")) saved_ = e, had_ = true;
    ::unsetenv("STAX_CACHE_DIR");
  }
  ~CubinCache() {
    if (had_) ::setenv("STAX_CACHE_DIR", saved_.c_str(), 1);
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  const std::filesystem::path& dir() const { return dir_; }
  // Stored entries holding an ELF cubin.
  size_t cubins() const {
    size_t n = 0;
    std::error_code ec;
    for (const auto& e : std::filesystem::directory_iterator(dir_ / "kernels", ec)) {
      if (e.path().extension() != ".entry") continue;
      std::ifstream in(e.path(), std::ios::binary);
      std::stringstream ss;
      ss << in.rdbuf();
      n += ss.str().find("\x7f" "ELF") != std::string::npos;
    }
    return n;
  }

 private:
  std::filesystem::path dir_;
  std::string saved_;
  bool had_ = false;
};

}  // namespace stax::test
