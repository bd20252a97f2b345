// The representative end-to-end set of the CUDA backend tests (cuda_nvrtc_test, cuda_gpu_test):
// pointwise ops in every dtype, reductions of every type (rows, columns, full), fused softmax and
// layer_norm, indexing, and a config that runs graphs on cuda_nvrtc (default_device: cuda).
#pragma once

#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "core/graph/graph.h"
#include "core/graph/parser.h"
#include "tests/support/compiled_check.h"

namespace stax::test {

// cpu -> cpu_cpp, cuda -> cuda_nvrtc with `cuda_options`; graphs on "cpu" run on cuda.
inline Config cuda_config(OptionValue cuda_options = OptionValue::map()) {
  Config c = cpu_config();
  DeviceConfig cuda;
  cuda.backend = "cuda_nvrtc";
  cuda.options = std::move(cuda_options);
  cuda.location = "<test>";
  c.devices["cuda"] = std::move(cuda);
  c.default_device = "cuda";
  return c;
}

struct E2eCase {
  std::string name;
  Graph graph;
  std::vector<Tensor> inputs;
  // Floating outputs whose sums / products the GPU kernels combine in a tree (another order
  // than the interpreter's): (output index, reduction length n). Every other output of a
  // non-approximate case is bit for bit.
  std::vector<std::pair<size_t, int64_t>> reordered;
  // Fused graphs with reordered inner sums (softmax, layer_norm): compared with allclose.
  bool approximate = false;
};

// The inputs with every floating element replaced by its magnitude: interpreting a reordered
// reduction on them gives the sum of |a_i| its §6.5 bound needs.
inline std::vector<Tensor> abs_inputs(const std::vector<Tensor>& in) {
  std::vector<Tensor> out;
  for (const Tensor& t : in) {
    Tensor a = t.clone();
    if (is_floating(a.dtype()))
      for (int64_t i = 0; i < a.numel(); ++i) a.set_double(i, std::fabs(a.get_double(i)));
    out.push_back(a);
  }
  return out;
}

// The unit roundoff of a dtype's storage (the final rounding of a half-type result; the compute
// dtype's own roundoff otherwise).
inline double output_roundoff(DType d) {
  if (d == DType::Float16) return std::ldexp(1.0, -11);
  if (d == DType::BFloat16) return std::ldexp(1.0, -8);
  return unit_roundoff(d);
}

inline std::vector<E2eCase> cuda_e2e_cases() {
  std::vector<E2eCase> cases;
  const DType all[] = {DType::Float32, DType::Float64, DType::Float16, DType::BFloat16,
                       DType::Int64,   DType::Int32,   DType::Int8,    DType::UInt8,
                       DType::Bool,    DType::Int16};
  for (DType dt : all) {  // pointwise, every dtype
    E2eCase c{std::string("pointwise ") + std::string(dtype_name(dt)), Graph(), {}, {}, false};
    Graph& g = c.graph;
    Node* x = g.placeholder("x", {7, 33}, dt);
    Node* y = g.placeholder("y", {7, 33}, dt);
    std::vector<Node*> outs = {g.call("eq.Tensor", {x, y}), g.call("to.dtype", {x, DType::Float16}),
                               g.call("to.dtype", {x, DType::Int64})};
    if (dt != DType::Bool) {
      outs.push_back(g.call("add.Tensor", {x, y}));
      outs.push_back(g.call("mul.Tensor", {x, g.call("abs", {y})}));
      outs.push_back(g.call("maximum", {x, y}));
    }
    if (is_floating(dt)) {
      for (const char* op : {"exp", "log1p", "tanh", "sigmoid", "erf", "rsqrt", "round"})
        outs.push_back(g.call(op, {x}));
      outs.push_back(g.call("pow.Tensor_Scalar", {x, 3}));
    } else {  // ABI 1.8's bitwise opcodes (bool: the logical ops)
      outs.push_back(g.call("bitwise_and.Tensor", {x, y}));
      outs.push_back(g.call("bitwise_or.Tensor", {x, y}));
      outs.push_back(g.call("bitwise_xor.Tensor", {x, y}));
      Arg k = dt == DType::Bool ? Arg(true) : Arg(int64_t{-3});
      outs.push_back(g.call("bitwise_xor.Scalar", {x, k}));
    }
    g.output(outs);
    c.inputs = random_inputs(g, 11);
    cases.push_back(std::move(c));
  }
  // uint16 / uint32 / uint64: the ops torch takes them in; random inputs wrap negative draws, so
  // uint64 values from 2^63 on convert to floats as unsigned.
  for (DType dt : {DType::UInt16, DType::UInt32, DType::UInt64}) {
    E2eCase c{std::string("pointwise ") + std::string(dtype_name(dt)), Graph(), {}, {}, false};
    Graph& g = c.graph;
    Node* x = g.placeholder("x", {7, 33}, dt);
    Node* y = g.placeholder("y", {7, 33}, dt);
    Node* eq = g.call("eq.Tensor", {x, y});
    g.output({eq, g.call("to.dtype", {x, DType::Float16}), g.call("to.dtype", {x, DType::Float64}),
              g.call("to.dtype", {x, DType::Int64}), g.call("mul.Tensor", {x, y}),
              g.call("where.self", {eq, x, y}), g.call("to.dtype", {g.call("to.dtype", {y, DType::Float32}), dt}),
              g.call("bitwise_and.Tensor", {x, y}), g.call("bitwise_xor.Tensor", {x, y})});
    c.inputs = random_inputs(g, 15);
    cases.push_back(std::move(c));
  }
  for (DType dt : {DType::Float32, DType::Float16, DType::BFloat16, DType::Int32, DType::Bool,
                   DType::Int16}) {
    E2eCase c{std::string("reductions ") + std::string(dtype_name(dt)), Graph(), {}, {}, false};
    Graph& g = c.graph;
    Node* x = g.placeholder("x", {6, 5, 300}, dt);
    std::vector<Node*> outs = {g.call("sum.dim_IntList", {x, std::vector<int64_t>{-1}}),
                               g.call("amax", {x, std::vector<int64_t>{2}}),
                               g.call("amin", {x, std::vector<int64_t>{0}, true}),
                               g.call("argmax", {x, 2}),
                               g.call("argmin", {x, 1, true}),
                               g.call("argmax", {x}),
                               g.call("any.dim", {x, 2}),
                               g.call("all.dim", {x, 0}),
                               g.call("sum.default", {x})};
    if (dt != DType::Bool) outs.push_back(g.call("prod.dim_int", {x, 1}));
    if (is_floating(dt)) {
      outs.push_back(g.call("mean.dim", {x, std::vector<int64_t>{-1}}));
      c.reordered = {{0, 300}, {8, 6 * 5 * 300}, {9, 5}, {10, 300}};
    }
    g.output(outs);
    c.inputs = random_inputs(g, 12, -3, 4);
    cases.push_back(std::move(c));
  }
  for (const char* file : {"softmax.stax", "layer_norm.stax", "example_1_1.stax"}) {
    E2eCase c{file, parse_graph_file(std::string(STAX_SOURCE_DIR) + "/examples/" + file), {}, {},
              true};
    c.inputs = random_inputs(c.graph, 13);
    cases.push_back(std::move(c));
  }
  {
    E2eCase c{"indexing", Graph(), {}, {}, false};
    Graph& g = c.graph;
    Node* x = g.placeholder("x", {5, 7});
    Node* idx = g.placeholder("idx", {4}, DType::Int64);
    Node* gidx = g.placeholder("gidx", {5, 3}, DType::Int64);
    Node* nidx = g.placeholder("nidx", {4}, DType::Int64);
    g.output({g.call("index_select", {x, 0, idx}), g.call("gather", {x, 1, gidx}),
              g.call("index.Tensor", {x, Arg(Arg::List{Arg(nidx)})}),
              g.call("cat", {std::vector<Node*>{x, x}, 0})});
    c.inputs = random_inputs(g, 14);
    c.inputs[1] = Tensor::from_vector<int64_t>({4}, {0, 4, 1, 4});
    c.inputs[2] = Tensor::randint({5, 3}, 0, 7, DType::Int64, 9);
    c.inputs[3] = Tensor::from_vector<int64_t>({4}, {0, -1, 3, -5});
    cases.push_back(std::move(c));
  }
  return cases;
}

}  // namespace stax::test
