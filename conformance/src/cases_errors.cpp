// Must-fail cases: each is a clean stax::Error with a message that says what went wrong, and the
// backend keeps working afterwards.
//   * an option the backend does not know is rejected, naming the option;
//   * an invalid kernel description is refused at compile time (the SDK's validate());
//   * an index outside its dimension at run time fails with "index out of bounds".
#include <string>

#include "core/backend/plugin.h"
#include "core/backend/plugin_registry.h"
#include "core/interpreter/interpreter.h"
#include "core/support/error.h"
#include "stax/conformance/compare.h"
#include "stax/sdk/kernel_builder.hpp"
#include "target.h"

namespace stax::conformance {
namespace {

// The message of the stax::Error f throws ("" and a test failure when it throws none).
template <typename F>
std::string error_of(F f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  ADD_FAILURE() << "no stax::Error thrown";
  return "";
}

bool contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

Graph small_graph(const Target& t) {
  Graph g;
  g.output({g.call("relu", {t.input(g, "x", {4})})});
  return g;
}

void unknown_option(Target& t) {
  std::string e = error_of([&] {
    auto c = t.compiler_with([](DeviceConfig& d) {
      d.options.set("conformance_no_such_option", OptionValue::make_scalar("1"));
    });
    c->compile(small_graph(t));
  });
  EXPECT_TRUE(contains(e, "conformance_no_such_option")) << e;
}

void invalid_kernel(Target& t) {
  PluginRegistry reg(t.config());
  Plugin& backend = reg.backend(t.device());
  sdk::KernelBuilder kb("bad_kernel");
  int in = kb.add_buffer("in", sdk::DType::Float32, {4}, sdk::BufferRole::Input);
  int out = kb.add_buffer("out", sdk::DType::Float32, {4}, sdk::BufferRole::Output);
  kb.set_ranges({4});
  sdk::BodyBuilder& b = kb.add_body("out");
  b.store(out, b.i(0), b.load(in, b.i(3)));  // i3: the kernel has one iteration variable
  std::string e = error_of([&] { backend.compile(*kb.desc()); });
  EXPECT_TRUE(contains(e, "iteration variable i3 out of range")) << e;
  // Still usable: a graph compiles and runs after the refused kernel.
  Graph g = small_graph(t);
  t.expect_bitwise(g, special_inputs(g));
}

void index_out_of_bounds(Target& t) {
  Graph g;
  Node* x = t.input(g, "x", {5, 7});
  Node* idx = t.input(g, "idx", {3}, DType::Int64);
  g.output({g.call("index_select", {x, 0, idx})});
  CompiledGraph cg = t.compiler().compile(g);
  Tensor xs = Tensor::randn({5, 7}, DType::Float32, 1);
  for (int64_t bad : {int64_t{5}, int64_t{-6}, int64_t{1} << 40}) {
    Tensor ids = Tensor::from_vector<int64_t>({3}, {0, bad, 1});
    std::string e = error_of([&] { cg.run({xs, ids}); });
    EXPECT_TRUE(contains(e, "index out of bounds")) << "index " << bad << ": " << e;
  }
  Tensor ok = Tensor::from_vector<int64_t>({3}, {4, 0, 2});
  EXPECT_TRUE(bitwise_equal(cg.run({xs, ok})[0], interpret(g, {xs, ok})[0]));
}

}  // namespace

void add_error_cases(std::vector<Case>& out) {
  out.push_back({"MustFail", "UnknownOption", unknown_option});
  out.push_back({"MustFail", "InvalidKernelDescription", invalid_kernel});
  out.push_back({"MustFail", "IndexOutOfBounds", index_out_of_bounds});
}

}  // namespace stax::conformance
