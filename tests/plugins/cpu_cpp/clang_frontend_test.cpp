// cpu_cpp's Clang frontend is a library of its own (plugins/cpu_cpp/clang_frontend.h), dlopened
// by the first compile that needs Clang from the plugin's own directory. Like a plugin, it must be
// the user's (or root's) and writable by no one else before its constructors may run: a copy of
// the plugin beside a group-writable frontend compiles nothing and says why. So must the JIT,
// cpu_cpp_jit.so (plugins/cpu_cpp/jit_library.h), which the plugin dlopens the same way. (That a
// process whose kernels all come from the disk cache loads neither: kernel_cache_test,
// AProcessThatOnlyHitsNeverLoadsClangOrLlvm.)
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "core/graph/graph.h"
#include "tests/support/compiled_check.h"

namespace stax {
namespace {

namespace fs = std::filesystem;

// A copy of the plugin, its JIT and its frontend in a directory of their own, `writable` made
// group-writable; the message of a compile there. (A directory per case: a library loaded once
// stays loaded, and the plugin remembers why one was refused.)
std::string compile_beside_a_writable(const std::string& writable) {
  const fs::path dir = fs::temp_directory_path() / ("stax_clang_frontend_test_" +
                                                    std::to_string(::getpid()) + "_" + writable);
  fs::remove_all(dir);
  fs::create_directory(dir);
  fs::permissions(dir, fs::perms::owner_all);
  for (const char* file : {"libstax_cpu_cpp.so", "cpu_cpp_jit.so", "cpu_cpp_clang_frontend.so"})
    fs::copy_file(fs::path(STAX_PLUGIN_DIR) / file, dir / file);
  EXPECT_EQ(::chmod((dir / writable).c_str(), 0664), 0);  // group-writable

  Config config = test::cpu_config();
  config.plugin_path = {dir};
  Graph g;
  Node* x = g.placeholder("x", {4, 8}, DType::Float32);
  g.output({g.call("mul.Tensor", {x, x})});
  std::string what;
  try {
    Compiler compiler(config);
    compiler.compile(g);
  } catch (const Error& e) {
    what = e.what();
  }
  fs::remove_all(dir);
  return what;
}

TEST(ClangFrontend, AFrontendOthersCanWriteIsNeverLoaded) {
  const std::string what = compile_beside_a_writable("cpu_cpp_clang_frontend.so");
  EXPECT_NE(what.find("refusing to load the Clang frontend: "), std::string::npos) << what;
  EXPECT_NE(what.find("cpu_cpp_clang_frontend.so is writable by others"), std::string::npos)
      << what;
}

TEST(ClangFrontend, AJitOthersCanWriteIsNeverLoaded) {
  const std::string what = compile_beside_a_writable("cpu_cpp_jit.so");
  EXPECT_NE(what.find("refusing to load the cpu_cpp JIT: "), std::string::npos) << what;
  EXPECT_NE(what.find("cpu_cpp_jit.so is writable by others"), std::string::npos) << what;
}

}  // namespace
}  // namespace stax
