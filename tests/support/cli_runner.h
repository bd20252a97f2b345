// Helpers of the tests that run this build tree's programs as processes (cli_test,
// cli_compile_test, cli_grad_test, train_mlp_test): running a command with its exit code and
// output captured, a fresh directory per test, files in it, and paths to the examples and binaries.
#pragma once

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "tests/support/strings.h"

namespace stax::test {

struct CliResult {
  int code = -1;  // the exit status, -1 when the process did not exit normally
  std::string out, err;
};

inline std::string slurp(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// examples/NAME in the source tree.
inline std::string example(const std::string& name) {
  return (std::filesystem::path(STAX_SOURCE_DIR) / "examples" / name).string();
}

// bin/NAME in the build tree.
inline std::string binary(const std::string& name) {
  return (std::filesystem::path(STAX_BINARY_DIR) / "bin" / name).string();
}

// Runs the shell command `cmd` with its stdout captured through popen. Its stderr goes to
// `err_file` and comes back in `err`; without one, it is merged into `out` (2>&1).
inline CliResult run_command(const std::string& cmd, const std::filesystem::path& err_file = {}) {
  std::string full = cmd + (err_file.empty() ? " 2>&1" : " 2>" + err_file.string());
  CliResult r;
  FILE* pipe = popen(full.c_str(), "r");
  if (!pipe) return r;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, pipe)) > 0) r.out.append(buf, n);
  int status = pclose(pipe);
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  if (!err_file.empty()) r.err = slurp(err_file);
  return r;
}

// A fixture with a fresh, empty directory per test (the build tree's
// test_tmp/<suite>_<test>_<pid>), removed afterwards, and `stax ARGS` run with stdout and stderr
// captured separately.
class CliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = std::filesystem::path(STAX_BINARY_DIR) / "test_tmp" /
           (std::string(info->test_suite_name()) + "_" + info->name() + "_" +
            std::to_string(getpid()));
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  // Runs `stax ARGS`; stderr passes through dir_/stderr.txt.
  CliResult stax(const std::string& args) {
    return run_command(binary("stax") + " " + args, dir_ / "stderr.txt");
  }

  // Writes `text` to dir_/NAME.
  std::filesystem::path write(const std::string& name, const std::string& text) {
    std::filesystem::path p = dir_ / name;
    std::ofstream(p, std::ios::binary) << text;
    return p;
  }

  std::filesystem::path dir_;
};

}  // namespace stax::test
