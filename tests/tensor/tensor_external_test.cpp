// Tensor::from_external (core/tensor/tensor.h): a view of memory Stax does not own, keeping its
// owner alive, as the Python package's zero-copy DLPack inputs use it. The owner here is a
// shared_ptr whose deleter counts releases: it must run exactly once, after the last Tensor
// viewing the memory (views, copies of the Tensor, compiled outputs aliasing an input) is gone.
#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "core/graph/graph.h"
#include "core/interpreter/interpreter.h"
#include "core/support/error.h"
#include "core/tensor/tensor.h"
#include "tests/support/compiled_check.h"

namespace stax {
namespace {

// Host memory with a release counter standing in for a DLPack producer.
struct Producer {
  std::vector<float> data;
  int* releases;
  std::shared_ptr<void> owner() {
    return std::shared_ptr<void>(data.data(), [r = releases](void*) { ++*r; });
  }
};

TEST(TensorExternal, ViewsTheMemoryWithoutACopy) {
  int releases = 0;
  Producer p{{0, 1, 2, 3, 4, 5}, &releases};
  Tensor t = Tensor::from_external(p.data.data(), {2, 3}, {3, 1}, DType::Float32, p.owner());
  EXPECT_EQ(static_cast<void*>(t.data_ptr()), static_cast<void*>(p.data.data()));
  EXPECT_TRUE(t.storage()->borrowed());
  EXPECT_EQ(t.storage()->nbytes(), 6 * sizeof(float));
  EXPECT_EQ(t.to_vector<float>(), (std::vector<float>{0, 1, 2, 3, 4, 5}));
  p.data[4] = 40;  // the producer's writes are seen ...
  EXPECT_EQ(t.item_as_double({1, 1}), 40.0);
  t.set_from_double({0, 2}, 20);  // ... and Stax's writes reach the producer
  EXPECT_EQ(p.data[2], 20.0f);
  EXPECT_EQ(releases, 0);
  t = Tensor();
  EXPECT_EQ(releases, 1);
}

TEST(TensorExternal, StridedZeroDAndBroadcastViews) {
  int releases = 0;
  Producer p{{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}, &releases};
  // The transpose of a (3, 4) row-major matrix: strides (1, 4); spans all 12 elements.
  Tensor tt = Tensor::from_external(p.data.data(), {4, 3}, {1, 4}, DType::Float32, p.owner());
  EXPECT_EQ(tt.storage()->nbytes(), 12 * sizeof(float));
  EXPECT_EQ(tt.to_vector<float>(), (std::vector<float>{0, 4, 8, 1, 5, 9, 2, 6, 10, 3, 7, 11}));
  // Every other element of row 1: only the elements reached count.
  Tensor every = Tensor::from_external(p.data.data() + 4, {2}, {2}, DType::Float32, p.owner());
  EXPECT_EQ(every.storage()->nbytes(), 3 * sizeof(float));
  EXPECT_EQ(every.to_vector<float>(), (std::vector<float>{4, 6}));
  // 0-d, and a broadcast (stride 0) view.
  Tensor scalar = Tensor::from_external(p.data.data() + 7, {}, {}, DType::Float32, p.owner());
  EXPECT_EQ(scalar.item(), 7.0);
  Tensor bcast =
      Tensor::from_external(p.data.data() + 1, {3, 2}, {0, 1}, DType::Float32, p.owner());
  EXPECT_EQ(bcast.to_vector<float>(), (std::vector<float>{1, 2, 1, 2, 1, 2}));
  tt = every = scalar = bcast = Tensor();
  EXPECT_EQ(releases, 4);
}

TEST(TensorExternal, TheOwnerLivesAsLongAsAnyView) {
  int releases = 0;
  Producer p{{1, 2, 3, 4}, &releases};
  Tensor view;
  {
    Tensor t = Tensor::from_external(p.data.data(), {4}, {1}, DType::Float32, p.owner());
    view = t.as_strided({2}, {2}, 1);  // elements 1 and 3
    Tensor copy = t;
  }
  EXPECT_EQ(releases, 0);
  EXPECT_EQ(view.to_vector<float>(), (std::vector<float>{2, 4}));
  Tensor c = view.contiguous();  // a copy: owned storage
  EXPECT_FALSE(c.storage()->borrowed());
  view = Tensor();
  EXPECT_EQ(releases, 1);
  EXPECT_EQ(c.to_vector<float>(), (std::vector<float>{2, 4}));
}

TEST(TensorExternal, EmptyTensorsNeedNoMemory) {
  int releases = 0;
  Producer p{{}, &releases};
  Tensor t = Tensor::from_external(nullptr, {0, 3}, {3, 1}, DType::Float32, p.owner());
  EXPECT_EQ(t.numel(), 0);
  EXPECT_FALSE(t.storage()->borrowed());
  EXPECT_EQ(releases, 1);  // nothing to keep alive
}

TEST(TensorExternal, BadViewsAreErrors) {
  alignas(8) unsigned char bytes[64] = {};
  auto expect_error = [](auto&& f, const std::string& needle) {
    try {
      f();
      ADD_FAILURE() << "no error (expected '" << needle << "')";
    } catch (const Error& e) {
      EXPECT_EQ(e.stage(), "runtime");
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  };
  expect_error([&] { Tensor::from_external(nullptr, {2}, {1}, DType::Float32, nullptr); },
               "null data pointer");
  expect_error(
      [&] {
        Tensor::from_external(bytes, {2, 2}, {-2, 1}, DType::Float32, nullptr);
      },
      "negative stride");
  expect_error([&] { Tensor::from_external(bytes + 1, {2}, {1}, DType::Float32, nullptr); },
               "not aligned");
  expect_error(
      [&] {
        Tensor::from_external(bytes, {2, 2}, {1}, DType::Float32, nullptr);
      },
      "differ in rank");
  expect_error(
      [&] {
        Tensor::from_external(bytes, {3, 3}, {int64_t{1} << 62, 1}, DType::Float32, nullptr);
      },
      "past the address space");
  expect_error([&] { Tensor::from_external(bytes, {-1}, {1}, DType::Float32, nullptr); },
               "negative size");
}

// The interpreter and a compiled graph read borrowed inputs as they read owned ones; an output
// that is a view of an input keeps the input's owner alive.
TEST(TensorExternal, GraphsReadBorrowedInputs) {
  int releases = 0;
  Producer p{std::vector<float>(64 * 128), &releases};
  for (size_t i = 0; i < p.data.size(); ++i) p.data[i] = static_cast<float>(i % 97) - 48.0f;
  Graph g;
  Node* x = g.placeholder("x", {64, 128});
  Node* r = g.call("relu", {x});
  Node* v = g.call("view", {x, std::vector<int64_t>{128, 64}});
  g.output({r, v});
  Tensor borrowed =
      Tensor::from_external(p.data.data(), {64, 128}, {128, 1}, DType::Float32, p.owner());
  Tensor owned = borrowed.clone();
  std::vector<Tensor> want = interpret(g, {owned});
  std::vector<Tensor> got = interpret(g, {borrowed});
  EXPECT_TRUE(got[0].equal(want[0]));
  CompiledGraph cg = test::cpu_compiler().compile(g);
  std::vector<Tensor> out = cg.run({borrowed});
  EXPECT_TRUE(out[0].equal(want[0]));
  EXPECT_TRUE(out[1].equal(want[1]));
  EXPECT_EQ(static_cast<void*>(out[1].data_ptr()), static_cast<void*>(p.data.data()))
      << "the view output aliases the borrowed input";
  borrowed = Tensor();
  got.clear();
  EXPECT_EQ(releases, 0) << "the view output still holds the producer's memory";
  out.clear();
  EXPECT_EQ(releases, 1);
}

}  // namespace
}  // namespace stax
