// cpu_cpp's Clang frontend is a library of its own (plugins/cpu_cpp/clang_frontend.h), dlopened
// by the first compile that needs Clang from the plugin's own directory. Like a plugin, it must be
// the user's (or root's) and writable by no one else before its constructors may run: a copy of
// the plugin beside a group-writable frontend compiles nothing and says why. (That a process whose
// kernels all come from the disk cache never loads it: kernel_cache_test,
// AProcessThatOnlyHitsNeverLoadsClang.)
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

TEST(ClangFrontend, AFrontendOthersCanWriteIsNeverLoaded) {
  const fs::path dir = fs::temp_directory_path() /
                       ("stax_clang_frontend_test_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directory(dir);
  fs::permissions(dir, fs::perms::owner_all);
  fs::copy_file(fs::path(STAX_PLUGIN_DIR) / "libstax_cpu_cpp.so", dir / "libstax_cpu_cpp.so");
  const fs::path frontend = dir / "cpu_cpp_clang_frontend.so";
  fs::copy_file(fs::path(STAX_PLUGIN_DIR) / "cpu_cpp_clang_frontend.so", frontend);
  ASSERT_EQ(::chmod(frontend.c_str(), 0664), 0);  // group-writable

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
  EXPECT_NE(what.find("refusing to load the Clang frontend: " + frontend.string() +
                      " is writable by others"),
            std::string::npos)
      << what;
}

}  // namespace
}  // namespace stax
