// Ops returning several tensors (docs/DECISIONS.md, "Multi-output nodes"; core/graph/multi_output.h),
// with aten's schemas, and `getitem` (FX's operator.getitem) selecting one element. Each op's
// element metadata are those of its expansion into single-output ops (below), so the two cannot
// disagree:
//   max.dim / min.dim          values = gather(self, argmax/argmin), indices = argmax / argmin
//                              (values go through gather so that the gradient goes to the selected
//                              element only, as torch's; amax would split it among ties)
//   sort / sort.stable         indices = argsort.stable, values = gather(self, indices)
//   topk                       the first k of a stable argsort (descending when largest)
//   kthvalue / median.dim      the k-th of a stable ascending argsort ((n-1)/2 for median)
//   split.Tensor / split.sizes / split_with_sizes / unsafe_split* / chunk / tensor_split.sections
//   / tensor_split.indices     slice.Tensor views; unbind.int: select.int views
//   var_mean / std_mean        var / std and mean.dim of the same reduction
//   aminmax / _aminmax.dim     amin, amax
//   native_layer_norm          layer_norm; mean and rstd (detached: torch declares them not
//                              differentiable) with keepdim shape
//   native_batch_norm          batch_norm; training: the batch mean and invstd over (0, 2, ...)
//                              (detached), eval: two empty tensors as torch's CPU kernel returns
//   native_group_norm          group_norm; mean and rstd per (N, group), differentiable (torch's
//                              backward uses their gradients)
//   nll_loss_forward           nll_loss; total_weight (the weight of the targets not ignored)
//   log_sigmoid_forward        min(x, 0) - log1p(exp(-|x|)); buffer exp(-|x|)
//   max_pool{1,2,3}d_with_indices  max_pool{n}d; the indices from an argmax over the windows
//   mode                       stable argsort, run starts by a cummax scan, the first longest run
//   cummax / cummin            a log-step scan of pointwise selects over (value, index) pairs
//   frexp.Tensor               floor(log2|x|) + 1, corrected by one; x scaled by exact powers of 2
//   adaptive_max_pool{1,2,3}d  per dim, argmax + gather of each window's slice, then cat
#include <algorithm>
#include <limits>

#include "core/graph/multi_output.h"
#include "core/ops/nn/multilabel_margin.h"
#include "core/ops/nn/params.h"
#include "core/graph/op_registry.h"
#include "core/ops/registration.h"
#include "core/support/error.h"

namespace stax {

namespace {

using Ints = std::vector<int64_t>;

int64_t wrapped(const ExpandCall& c, const Node* x, int64_t dim) {
  int64_t rank = std::max<int64_t>(x->meta().dim(), 1);  // a 0-d tensor takes dim 0 / -1
  return wrap_dim(dim, rank, c.where());
}

Node* slice(Graph& g, Node* x, int64_t dim, int64_t start, int64_t end) {
  return g.call("slice.Tensor", {x, dim, start, end, int64_t{1}});
}

// Selecting along `dim` by an index tensor of keepdim shape; drops `dim` unless keepdim.
Node* take(Graph& g, Node* x, int64_t dim, Node* idx, bool keepdim) {
  Node* v = g.call("gather.default", {x, dim, idx});
  return keepdim || x->meta().dim() == 0 ? v : g.call("squeeze.dim", {v, dim});
}
Node* drop(Graph& g, Node* idx, int64_t dim, bool keepdim, const Node* x) {
  return keepdim || x->meta().dim() == 0 ? idx : g.call("squeeze.dim", {idx, dim});
}

std::vector<Node*> max_min_dim(Graph& g, const ExpandCall& c, bool is_max) {
  Node* x = c.tensor("self");
  int64_t dim = wrapped(c, x, c.get("dim").to_int());
  bool keepdim = c.get("keepdim").to_bool();
  if (x->meta().dim() > 0 && x->shape()[dim] == 0)
    c.fail(std::string(is_max ? "max" : "min") +
           "(): Expected reduction dim " + std::to_string(dim) + " to have non-zero size");
  Node* idx = g.call(is_max ? "argmax.default" : "argmin.default", {x, dim, true});
  return {take(g, x, dim, idx, keepdim), drop(g, idx, dim, keepdim, x)};
}

// Stable argsort of x along dim (a 0-d tensor: its only index).
Node* argsort(Graph& g, Node* x, int64_t dim, bool descending) {
  return g.call("argsort.stable", {x}, {{"stable", true}, {"dim", dim}, {"descending", descending}});
}

std::vector<Node*> sort(Graph& g, const ExpandCall& c) {
  Node* x = c.tensor("self");
  int64_t dim = wrapped(c, x, c.get("dim").to_int());
  Node* idx = argsort(g, x, dim, c.get("descending").to_bool());
  return {g.call("gather.default", {x, dim, idx}), idx};
}

std::vector<Node*> topk(Graph& g, const ExpandCall& c) {
  Node* x = c.tensor("self");
  int64_t dim = wrapped(c, x, c.get("dim").to_int());
  int64_t k = c.get("k").to_int();
  int64_t n = x->meta().dim() == 0 ? 1 : x->shape()[dim];
  if (k < 0 || k > n) c.fail("topk: k (" + std::to_string(k) + ") is out of range for a dimension of size " + std::to_string(n));
  Node* idx = argsort(g, x, dim, c.get("largest").to_bool());
  if (x->meta().dim() > 0) idx = slice(g, idx, dim, 0, k);
  return {g.call("gather.default", {x, dim, idx}), idx};
}

std::vector<Node*> kth(Graph& g, Node* x, int64_t dim, int64_t k, bool keepdim) {
  Node* idx = argsort(g, x, dim, false);
  if (x->meta().dim() > 0) idx = slice(g, idx, dim, k, k + 1);
  return {take(g, x, dim, idx, keepdim), drop(g, idx, dim, keepdim, x)};
}

std::vector<Node*> kthvalue(Graph& g, const ExpandCall& c) {
  Node* x = c.tensor("self");
  int64_t dim = wrapped(c, x, c.get("dim").to_int());
  int64_t k = c.get("k").to_int();
  int64_t n = x->meta().dim() == 0 ? 1 : x->shape()[dim];
  if (k < 1 || k > n)
    c.fail("kthvalue(): selected number k (" + std::to_string(k) + ") out of range for a dimension of size " + std::to_string(n));
  return kth(g, x, dim, k - 1, c.get("keepdim").to_bool());
}

std::vector<Node*> median_dim(Graph& g, const ExpandCall& c) {
  Node* x = c.tensor("self");
  int64_t dim = wrapped(c, x, c.get("dim").to_int());
  int64_t n = x->meta().dim() == 0 ? 1 : x->shape()[dim];
  if (n == 0) c.fail("median(): Expected reduction dim " + std::to_string(dim) + " to have non-zero size");
  return kth(g, x, dim, (n - 1) / 2, c.get("keepdim").to_bool());
}

// nanmedian.dim: the median of the non-NaN elements along dim (the lower of the two middle ones),
// NaN (the first NaN's index) where every element is NaN: the stable argsort puts NaN last, and
// the k non-NaN elements come first.
std::vector<Node*> nanmedian_dim(Graph& g, const ExpandCall& c) {
  Node* x = c.tensor("self");
  if (x->meta().dim() == 0 || !is_floating(x->dtype())) return median_dim(g, c);
  int64_t dim = wrapped(c, x, c.get("dim").to_int());
  if (x->shape()[dim] == 0)
    c.fail("nanmedian(): Expected reduction dim " + std::to_string(dim) + " to have non-zero size");
  Node* order = argsort(g, x, dim, false);
  Node* valid = g.call("logical_not", {g.call("isnan", {x})});
  Node* k = g.call("sum.dim_IntList", {valid, Ints{dim}, true});
  Node* pos = g.call("clamp_min", {g.call("floor_divide.Scalar", {g.call("sub.Scalar", {k, 1}), 2}), 0});
  Node* idx = g.call("gather.default", {order, dim, pos});
  bool keepdim = c.get("keepdim").to_bool();
  return {take(g, x, dim, idx, keepdim), drop(g, idx, dim, keepdim, x)};
}

// Slices of x along dim at the given boundaries (sizes summing to the dim's size).
std::vector<Node*> split_sizes(Graph& g, const ExpandCall& c, Node* x, int64_t dim, const Ints& sizes) {
  if (x->meta().dim() == 0) c.fail("split expects at least a 1-dimensional tensor");
  std::vector<Node*> out;
  int64_t at = 0;
  for (int64_t s : sizes) {
    if (s < 0) c.fail("split sizes must be non-negative, got " + std::to_string(s));
    out.push_back(slice(g, x, dim, at, at + s));
    at += s;
  }
  if (at != x->shape()[dim])
    c.fail("split sizes add up to " + std::to_string(at) + " but dimension " + std::to_string(dim) +
           " has size " + std::to_string(x->shape()[dim]));
  return out;
}

std::vector<Node*> split_tensor(Graph& g, const ExpandCall& c) {
  Node* x = c.tensor("self");
  int64_t dim = wrapped(c, x, c.get("dim").to_int());
  int64_t size = c.get("split_size").to_int();
  if (x->meta().dim() == 0) c.fail("split expects at least a 1-dimensional tensor");
  int64_t n = x->shape()[dim];
  if (size < 0 || (size == 0 && n != 0))
    c.fail("split_size can only be 0 if dimension size is 0, but got split_size " + std::to_string(size));
  Ints sizes;
  if (size == 0) sizes = {0};
  for (int64_t at = 0; size > 0 && at < n; at += size) sizes.push_back(std::min(size, n - at));
  if (sizes.empty()) sizes = {0};
  return split_sizes(g, c, x, dim, sizes);
}

std::vector<Node*> split_with_sizes(Graph& g, const ExpandCall& c, const char* param) {
  Node* x = c.tensor("self");
  int64_t dim = wrapped(c, x, c.get("dim").to_int());
  return split_sizes(g, c, x, dim, c.get(param).to_int_list());
}

std::vector<Node*> chunk(Graph& g, const ExpandCall& c) {
  Node* x = c.tensor("self");
  int64_t dim = wrapped(c, x, c.get("dim").to_int());
  int64_t chunks = c.get("chunks").to_int();
  if (chunks <= 0) c.fail("chunk expects `chunks` to be greater than 0, got: " + std::to_string(chunks));
  if (x->meta().dim() == 0) c.fail("chunk expects at least a 1-dimensional tensor");
  int64_t n = x->shape()[dim];
  int64_t size = (n + chunks - 1) / chunks;
  Ints sizes;
  if (size == 0) {  // torch: an empty dim gives `chunks` empty chunks
    sizes.assign(static_cast<size_t>(chunks), 0);
  } else {
    for (int64_t at = 0; at < n; at += size) sizes.push_back(std::min(size, n - at));
  }
  return split_sizes(g, c, x, dim, sizes);
}

std::vector<Node*> tensor_split_sections(Graph& g, const ExpandCall& c) {
  Node* x = c.tensor("self");
  if (x->meta().dim() == 0) c.fail("tensor_split expected at least a 1-dimensional tensor, but got a tensor with 0 dims");
  int64_t dim = wrapped(c, x, c.get("dim").to_int());
  int64_t sections = c.get("sections").to_int();
  if (sections <= 0) c.fail("number of sections must be larger than 0, got " + std::to_string(sections));
  int64_t n = x->shape()[dim];
  Ints sizes;
  for (int64_t i = 0; i < sections; ++i) sizes.push_back(n / sections + (i < n % sections ? 1 : 0));
  return split_sizes(g, c, x, dim, sizes);
}

std::vector<Node*> tensor_split_indices(Graph& g, const ExpandCall& c) {
  Node* x = c.tensor("self");
  if (x->meta().dim() == 0) c.fail("tensor_split expected at least a 1-dimensional tensor, but got a tensor with 0 dims");
  int64_t dim = wrapped(c, x, c.get("dim").to_int());
  int64_t n = x->shape()[dim];
  std::vector<Node*> out;
  int64_t start = 0;
  auto clampi = [n](int64_t i) { return std::clamp<int64_t>(i < 0 ? i + n : i, 0, n); };
  // Python's slicing, as torch: piece i is x[indices[i-1]:indices[i]] (empty when the indices
  // decrease), the last one x[indices[-1]:].
  for (int64_t i : c.get("indices").to_int_list()) {
    int64_t end = clampi(i);
    out.push_back(slice(g, x, dim, start, std::max(end, start)));
    start = end;
  }
  out.push_back(slice(g, x, dim, start, n));
  return out;
}

std::vector<Node*> unbind(Graph& g, const ExpandCall& c) {
  Node* x = c.tensor("self");
  if (x->meta().dim() == 0) c.fail("unbind: dimension specified as 0 but tensor has no dimensions");
  int64_t dim = wrapped(c, x, c.get("dim").to_int());
  std::vector<Node*> out;
  for (int64_t i = 0; i < x->shape()[dim]; ++i) out.push_back(g.call("select.int", {x, dim, i}));
  return out;
}

// var_mean / std_mean: (var or std, mean) over the same dims.
std::vector<Node*> stat_mean(Graph& g, const ExpandCall& c, const std::string& stat) {
  Node* x = c.tensor("self");
  const std::string& ov = c.op().schema.overload;
  Node* s;
  Arg dim = ov == "default" ? Arg() : c.get("dim");
  bool keepdim = ov == "default" ? false : c.get("keepdim").to_bool();
  if (ov == "correction") {
    s = g.call(stat + ".correction", {x, dim}, {{"correction", c.get("correction")}, {"keepdim", keepdim}});
  } else if (ov == "dim") {
    s = g.call(stat + ".dim", {x, dim, c.get("unbiased"), keepdim});
  } else {
    s = g.call(stat + ".default", {x, c.get("unbiased")});
  }
  Node* m = g.call("mean.dim", {x, dim, keepdim});
  return {s, m};
}

std::vector<Node*> aminmax(Graph& g, const ExpandCall& c) {
  Node* x = c.tensor("self");
  bool keepdim = c.get("keepdim").to_bool();
  Arg dims;
  if (c.has("dim")) {
    dims = Arg(Ints{wrapped(c, x, c.get("dim").to_int())});
  } else {
    if (x->meta().numel() == 0) c.fail("aminmax(): cannot compute aminmax over an empty dimension as the operation has no identity");
    Ints all;
    for (int64_t d = 0; d < x->meta().dim(); ++d) all.push_back(d);
    dims = Arg(all);
  }
  // A 0-d input gives 0-d results, keepdim or not (torch 2.x; torch 1.13 gave shape (1,)).
  Node* lo = g.call("amin.default", {x, dims, keepdim});
  Node* hi = g.call("amax.default", {x, dims, keepdim});
  return {lo, hi};
}

// The mean and rsqrt(var(x over dims, biased) + eps), detached where torch's derivative ignores
// their gradients (native_layer_norm / native_batch_norm: derivatives.yaml reads grads[0] only);
// native_group_norm keeps them differentiable: torch's backward adds their gradients when they
// are defined (infinitely_differentiable_native_group_norm_backward), so the statistics are the
// plain functions of x they are.
// The statistics keep the input's dtype, float16 / bfloat16 included: torch 2.15's CPU kernels
// of native_layer_norm / native_batch_norm / native_group_norm return them so (measured), where
// its meta functions say float32 for layer and batch norm (tests/meta/expected_mismatches.txt).
std::pair<Node*, Node*> mean_rstd(Graph& g, Node* x, const Ints& dims, bool keepdim, double eps,
                                  bool detach = true) {
  Node* m = g.call("mean.dim", {x, Arg(dims), keepdim});
  Node* v = g.call("var.correction", {x, Arg(dims)}, {{"correction", int64_t{0}}, {"keepdim", keepdim}});
  Node* r = g.call("rsqrt.default", {g.call("add.Scalar", {v, eps})});
  if (!detach) return {m, r};
  return {g.call("detach.default", {m}), g.call("detach.default", {r})};
}

std::vector<Node*> native_layer_norm(Graph& g, const ExpandCall& c) {
  Node* x = c.tensor("input");
  Ints shape = c.get("normalized_shape").to_int_list();
  double eps = c.get("eps").to_double();
  Node* out = g.call("layer_norm.default", {x, Arg(shape), c.get("weight"), c.get("bias"), eps});
  Ints dims;
  for (int64_t d = x->meta().dim() - static_cast<int64_t>(shape.size()); d < x->meta().dim(); ++d)
    dims.push_back(d);
  auto [m, r] = mean_rstd(g, x, dims, true, eps);
  return {out, m, r};
}

std::vector<Node*> native_batch_norm(Graph& g, const ExpandCall& c) {
  Node* x = c.tensor("input");
  bool training = c.get("training").to_bool();
  double eps = c.get("eps").to_double();
  if (training && x->meta().numel() == 0)  // torch's CPU kernel (batch_norm.default takes it)
    c.fail("input tensor must have at least one element in training, but got input sizes " +
           shape_str(x->shape()));
  Node* out = g.call("batch_norm.default", {x, c.get("weight"), c.get("bias"), c.get("running_mean"),
                                            c.get("running_var"), training, c.get("momentum"), eps,
                                            false});
  if (!training) {
    Node* e = g.call("full.default", {Arg(Ints{0}), 0.0},
                     {{"dtype", x->dtype()}});
    return {out, e, g.call("clone.default", {e})};
  }
  Ints dims = {0};
  for (int64_t d = 2; d < x->meta().dim(); ++d) dims.push_back(d);
  auto [m, r] = mean_rstd(g, x, dims, false, eps);
  return {out, m, r};
}

std::vector<Node*> native_group_norm(Graph& g, const ExpandCall& c) {
  Node* x = c.tensor("input");
  int64_t n = c.get("N").to_int(), groups = c.get("group").to_int();
  double eps = c.get("eps").to_double();
  if (n < 0) c.fail("native_group_norm: N must be non-negative, got " + std::to_string(n));
  int64_t channels = c.get("C").to_int(), hxw = c.get("HxW").to_int();
  if (groups > 0 && (channels % groups != 0 || n * channels * hxw != x->meta().numel()))
    c.fail("native_group_norm: N * C * HxW (" + std::to_string(n) + " * " +
           std::to_string(channels) + " * " + std::to_string(hxw) + ") must be the size of input " +
           shape_str(x->shape()) + " and C divisible by group (" + std::to_string(groups) + ")");
  if (groups <= 0 || x->meta().dim() < 2 || x->shape()[1] % groups != 0)
    c.fail("native_group_norm: the channel count must be divisible by group (" + std::to_string(groups) + ")");
  Node* out = g.call("group_norm.default", {x, groups, c.get("weight"), c.get("bias"), eps});
  int64_t per_group = c.get("C").to_int() / groups * c.get("HxW").to_int();
  Node* grouped = g.call("reshape.default", {x, Arg(Ints{n, groups, per_group})});
  auto [m, r] = mean_rstd(g, grouped, Ints{2}, false, eps, /*detach=*/false);
  return {out, m, r};
}

// The batch-norm forms torch.export's IR carries, as native_batch_norm (a call of its OpDef on the
// same tensors; running_mean / running_var None where the form has none):
//   _native_batch_norm_legit            running statistics given (their in-place update is the
//                                       parser's functionalization: it reads _functional's form)
//   _native_batch_norm_legit.no_stats   batch statistics only
//   _native_batch_norm_legit_no_training  eval: the running statistics
//   _native_batch_norm_legit_functional  also the updated running statistics, as torch computes
//                                       them: (1 - m) r + m s with the batch mean and the
//                                       unbiased batch variance (eval: the running ones, copied)
std::vector<Node*> batch_norm_form(Graph& g, const ExpandCall& c, bool stats, bool training) {
  const OpDef* bn = default_registry().find("native_batch_norm");
  // Training normalizes by the batch statistics: the running ones are not passed on, so that
  // native_batch_norm's own rule does not write them a second time (the forms that update them
  // return or write the update themselves).
  stats = stats && !training;
  std::vector<Arg> args{c.get("input"), c.get("weight"), c.get("bias"),
                        stats ? c.get("running_mean") : Arg(), stats ? c.get("running_var") : Arg(),
                        training, c.get("momentum"), c.get("eps")};
  return native_batch_norm(g, ExpandCall(*bn, std::move(args), {}, c.where()));
}

std::vector<Node*> batch_norm_functional(Graph& g, const ExpandCall& c, bool training) {
  std::vector<Node*> out = batch_norm_form(g, c, true, training);
  Node* rm = c.tensor("running_mean");
  Node* rv = c.tensor("running_var");
  if (!training) {
    out.push_back(g.call("clone.default", {rm}));
    out.push_back(g.call("clone.default", {rv}));
    return out;
  }
  Node* x = c.tensor("input");
  double m = c.get("momentum").to_double();
  Ints dims = {0};
  for (int64_t d = 2; d < x->meta().dim(); ++d) dims.push_back(d);
  Node* mean = g.call("detach.default", {g.call("mean.dim", {x, Arg(dims), false})});
  Node* var = g.call("detach.default",
                     {g.call("var.correction", {x, Arg(dims)}, {{"correction", int64_t{1}}})});
  auto update = [&](Node* r, Node* s) {
    Node* blended = g.call("add.Tensor", {g.call("mul.Scalar", {r, 1.0 - m}),
                                          g.call("mul.Scalar", {s, m})});
    return blended->dtype() == r->dtype() ? blended : g.call("to.dtype", {blended, r->dtype()});
  };
  out.push_back(update(rm, mean));
  out.push_back(update(rv, var));
  return out;
}

// torch 2.x's forms (what torch.export's IR and Inductor's decompositions carry since torch
// 2.3), native_batch_norm's three results and an empty uint8 `reserve` (cuDNN's workspace,
// empty on the CPU as torch's):
//   _batch_norm_with_update             training with the running statistics (their in-place
//                                       update is the mutation rule's, core/ops/mutation/rules.cpp)
//   _batch_norm_with_update_functional  also the updated running statistics (as _legit_functional)
//   _batch_norm_no_update               eval: the running statistics (torch requires them)
Node* empty_reserve(Graph& g) {
  return g.call("zeros.default", {Arg(Ints{0})}, {{"dtype", Arg(DType::UInt8)}});
}

std::vector<Node*> batch_norm_with_update(Graph& g, const ExpandCall& c, bool functional) {
  std::vector<Node*> out =
      functional ? batch_norm_functional(g, c, true) : batch_norm_form(g, c, true, true);
  out.insert(out.begin() + 3, empty_reserve(g));
  return out;
}

std::vector<Node*> batch_norm_no_update(Graph& g, const ExpandCall& c) {
  if (!c.has("running_mean") || !c.has("running_var"))
    c.fail("running_mean must be defined in evaluation mode");
  std::vector<Node*> out = batch_norm_form(g, c, true, false);
  out.push_back(empty_reserve(g));
  return out;
}

// native_dropout(input, p, train) -> (output, mask), as torch's CPU kernel: train (or None):
// mask = bernoulli(1 - p) drawn as rand_like(input) < 1 - p from the node's seed (the same uniform
// numbers dropout uses), output = input * mask * scale with scale = 1 / (1 - p) (0 when p = 1);
// train=False: a copy and an all-true mask. The rand_like node carries the tuple's rng_seed, so a
// backward that recomputes the mask draws the same numbers (seed §5.3).
std::vector<Node*> native_dropout(Graph& g, const ExpandCall& c) {
  Node* x = c.tensor("input");
  double p = c.get("p").to_double();
  const Arg& train = c.get("train");
  if (!train.is_absent() && !train.to_bool()) {  // any dtype and p, as torch: nothing is drawn
    Node* ones = g.call("ones_like.default", {x}, {{"dtype", Arg(DType::Bool)}});
    return {g.call("clone.default", {x}), ones};
  }
  if (!(p >= 0 && p <= 1)) c.fail("dropout probability has to be between 0 and 1, but got " + std::to_string(p));
  if (!is_floating(x->dtype()))
    c.fail("native_dropout in training expects a floating-point input, got " +
           std::string(dtype_name(x->dtype())));
  double p1m = 1.0 - p;
  double scale = p1m == 0 ? 0.0 : 1.0 / p1m;
  Node* mask = g.call("lt.Scalar", {g.call("rand_like.default", {x}), p1m});
  Node* out = g.call("mul.Scalar", {g.call("mul.Tensor", {x, mask}), scale});
  return {out, mask};
}

// rrelu_with_noise_functional(self, noise, lower, upper, training) -> (output, noise_out), as
// torch's CPU kernel: training: each element <= 0 draws a slope r uniform in [lower, upper)
// (lower + (upper - lower) u, u = rand_like from the node's seed, Stax's Philox: values differ
// from torch's generator) and gives x r with noise r; the others give x with noise 1 (noise_out
// has self's shape). Eval: leaky_relu with the slope (lower + upper) / 2, noise unchanged.
std::vector<Node*> rrelu_with_noise_functional(Graph& g, const ExpandCall& c) {
  Node* x = c.tensor("self");
  Node* noise = c.tensor("noise");
  double lo = c.get("lower").to_double(), hi = c.get("upper").to_double();
  if (!is_floating(x->dtype()))
    c.fail("rrelu expects a floating-point input, got " + std::string(dtype_name(x->dtype())));
  if (!c.get("training").to_bool())
    return {g.call("leaky_relu", {x, (lo + hi) / 2}), g.call("clone.default", {noise})};
  if (!(lo <= hi))
    c.fail("Lower bound should be less than or equal to the upper bound, got lower " +
           std::to_string(lo) + " and upper " + std::to_string(hi));
  Node* r = g.call("add.Scalar", {g.call("mul.Scalar", {g.call("rand_like.default", {x}), hi - lo}), lo});
  Node* neg = g.call("le.Scalar", {x, 0});
  Node* out = g.call("where.self", {neg, g.call("mul.Tensor", {x, r}), x});
  Node* slopes = g.call("where.ScalarOther", {neg, r, 1.0});
  if (slopes->dtype() != noise->dtype()) slopes = g.call("to.dtype", {slopes, noise->dtype()});
  return {out, slopes};
}

// multilabel_margin_loss_forward(self, target, reduction) -> (output, is_target): torch's CPU
// kernel (core/ops/nn/multilabel_margin.h); is_target in self's dtype and shape.
std::vector<Node*> multilabel_margin_loss_forward(Graph& g, const ExpandCall& c) {
  Node* x = c.tensor("self");
  Node* y = c.tensor("target");
  int64_t reduction = c.get("reduction").to_int();
  int64_t rank = x->meta().dim();
  if (!is_floating(x->dtype()))
    c.fail("multilabel_margin_loss expects a floating-point input, got " +
           std::string(dtype_name(x->dtype())));
  if (y->dtype() != DType::Int64)
    c.fail("multilabel_margin_loss expects an int64 target, got " + std::string(dtype_name(y->dtype())));
  if (rank > 2 || x->meta().numel() == 0)
    c.fail("Expected non-empty vector or matrix with optional 0-dim batch size, but got: " +
           shape_str(x->shape()));
  if (y->shape() != x->shape())
    c.fail("inconsistent target size: " + shape_str(y->shape()) + " for input of size: " +
           shape_str(x->shape()));
  if (reduction < 0 || reduction > 2) c.fail("reduction must be 0 (none), 1 (mean) or 2 (sum)");
  int64_t classes = rank == 2 ? x->shape()[1] : (rank == 1 ? x->shape()[0] : 1);
  Node* x2 = rank == 2 ? x : g.call("reshape", {x, Arg(Ints{1, classes})});
  Node* y2 = rank == 2 ? y : g.call("reshape", {y, Arg(Ints{1, classes})});
  nn::MultilabelMargin m = nn::multilabel_margin(g, x2, y2, nullptr);
  Node* per = g.call("div.Scalar", {g.call("sum.dim_IntList", {m.margin, Arg(Ints{1, 2})}),
                                    static_cast<double>(classes)});
  Node* out = reduction == 1 ? g.call("mean.default", {per})
              : reduction == 2 ? g.call("sum.default", {per})
              : rank == 2 ? per : g.call("reshape", {per, Arg(Ints{})});
  Node* is_target = g.call("to.dtype", {m.is_target, x->dtype()});
  if (rank != 2) is_target = g.call("reshape", {is_target, Arg(x->shape())});
  return {out, is_target};
}

// (output, total_weight): total_weight is the summed weight of the targets not ignored (0 for
// reduction='none'), as torch's CPU kernel.
std::vector<Node*> nll_loss_forward(Graph& g, const ExpandCall& c) {
  Node* x = c.tensor("self");
  Node* target = c.tensor("target");
  int64_t reduction = c.get("reduction").to_int();
  int64_t ignore = c.get("ignore_index").to_int();
  if (c.op().schema.base == "nll_loss2d_forward" &&
      (x->meta().dim() != 4 || target->meta().dim() != 3))
    c.fail("nll_loss2d_forward expects a 4-D self (N, C, H, W) and a 3-D target (N, H, W), got " +
           shape_str(x->shape()) + " and " + shape_str(target->shape()));
  Node* out = g.call("nll_loss.default", {x, target, c.get("weight"), reduction, ignore});
  Node* total;
  if (reduction == 0) {
    total = g.call("zeros.default", {Arg(Ints{})}, {{"dtype", x->dtype()}});
  } else {
    Node* valid = g.call("ne.Scalar", {target, ignore});
    Node* contrib;
    if (c.has("weight")) {
      Node* w = c.tensor("weight");
      int64_t classes = w->shape().empty() ? 1 : w->shape()[0];
      Node* safe = g.call("clamp.default", {target, int64_t{0}, classes - 1});
      Node* flat = g.call("reshape.default", {safe, Arg(Ints{-1})});
      Node* wt = g.call("reshape.default", {g.call("index_select.default", {w, int64_t{0}, flat}),
                                            Arg(target->shape())});
      contrib = g.call("where.ScalarOther", {valid, wt, 0.0});
    } else {
      contrib = g.call("to.dtype", {valid, x->dtype()});
    }
    total = g.call("sum.default", {contrib});
  }
  return {out, g.call("detach.default", {total})};
}

// (output, buffer): min(x, 0) - log1p(exp(-|x|)), and exp(-|x|) as torch's CPU kernel keeps it.
// min(x, 0) is written (x - |x|) / 2 (exact in floating point): its derivative at 0 is then 1/2,
// so the gradient is 1 - sigmoid(x) everywhere, 0 included, as torch's log_sigmoid_backward.
std::vector<Node*> log_sigmoid_forward(Graph& g, const ExpandCall& c) {
  Node* x = c.tensor("self");
  if (!is_floating(x->dtype()))  // torch's meta would keep an integer dtype; no kernel has it
    c.fail("log_sigmoid_forward expects a floating-point input, got " +
           std::string(dtype_name(x->dtype())));
  Node* a = g.call("abs.default", {x});
  Node* z = g.call("exp.default", {g.call("neg.default", {a})});
  Node* low = g.call("mul.Scalar", {g.call("sub.Tensor", {x, a}), 0.5});
  Node* out = g.call("sub.Tensor", {low, g.call("log1p.default", {z})});
  return {out, g.call("detach.default", {z})};
}

// (values, indices) of max_pool{n}d: the values are max_pool{n}d's; the index of each window's
// maximum (the first one, as torch's `val > max` scan; NaN wins) is the argmax over the stacked
// window slices (nn::pool_windows, row-major kernel order), decoded into the flattened position in
// the input's spatial dims: sum_d (o_d * stride_d - pad_d + offset_d * dilation_d) * inner_d.
std::vector<Node*> max_pool_with_indices(Graph& g, const ExpandCall& c, size_t n) {
  Node* x = c.tensor("self");
  if (x->meta().dim() != static_cast<int64_t>(n) + 1 && x->meta().dim() != static_cast<int64_t>(n) + 2)
    c.fail("max_pool" + std::to_string(n) + "d_with_indices expects a " + std::to_string(n + 1) +
           "-d or " + std::to_string(n + 2) + "-d input, got shape " + shape_str(x->shape()));
  nn::PoolParams p =
      nn::pool_params([&](const char* name) -> const Arg& { return c.get(name); }, n, true, c.where());
  Node* values = g.call("max_pool" + std::to_string(n) + "d.default",
                        {x, c.get("kernel_size"), c.get("stride"), c.get("padding"),
                         c.get("dilation"), c.get("ceil_mode")});
  const double inf = std::numeric_limits<double>::infinity();
  std::vector<Node*> windows = nn::pool_windows(g, x, p, -inf, -inf);
  Arg::List items;
  for (Node* w : windows) items.emplace_back(w);
  Node* which = g.call("argmax.default", {g.call("stack.default", {Arg(items), int64_t{-1}}),
                                           int64_t{-1}, false});
  const Shape& out = values->shape();
  const Shape& in = x->shape();
  size_t rank = out.size();
  Node* index = nullptr;
  int64_t kernel_inner = 1, input_inner = 1;
  for (size_t d = n; d-- > 0;) {
    int64_t od = out[rank - n + d];
    Node* offset = g.call("remainder.Scalar",
                          {g.call("floor_divide.Scalar", {which, kernel_inner}), p.kernel[d]});
    Ints grid_shape(n - d, 1);
    grid_shape[0] = od;
    Node* o = g.call("reshape.default",
                     {g.call("arange.default", {od}, {{"dtype", DType::Int64}}), Arg(grid_shape)});
    Node* start = g.call("sub.Scalar", {g.call("mul.Scalar", {o, p.stride[d]}), p.padding[d]});
    Node* coord = g.call("add.Tensor", {start, g.call("mul.Scalar", {offset, p.dilation[d]})});
    Node* term = g.call("mul.Scalar", {coord, input_inner});
    index = index ? g.call("add.Tensor", {index, term}) : term;
    kernel_inner *= p.kernel[d];
    input_inner *= in[in.size() - n + d];
  }
  return {values, index};
}

// (values, indices) of adaptive_max_pool{n}d, one spatial dim at a time from the last: window j
// of a dim of size L spans [floor(j L / o), ceil((j + 1) L / o)); its first maximum (argmax) is
// gathered from the values and from the flat indices of the dims already reduced, and its
// coordinate times the dim's inner size is added. The first maximum of a window in row-major
// order is the one torch's scan keeps.
std::vector<Node*> adaptive_max_pool(Graph& g, const ExpandCall& c, size_t n) {
  Node* x = c.tensor("self");
  int64_t rank = x->meta().dim();
  if (rank != static_cast<int64_t>(n) + 1 && rank != static_cast<int64_t>(n) + 2)
    c.fail("adaptive_max_pool" + std::to_string(n) + "d expects a " + std::to_string(n + 1) + "-d or " +
           std::to_string(n + 2) + "-d input, got shape " + shape_str(x->shape()));
  for (int64_t d = rank == static_cast<int64_t>(n) + 2 ? 1 : 0; d < rank; ++d)
    if (x->shape()[d] == 0)  // as torch: only the batch dim may be empty
      c.fail("adaptive_max_pool" + std::to_string(n) + "d(): expected input to have non-zero size "
             "for non-batch dimensions, but input " + shape_str(x->shape()) + " has dimension " +
             std::to_string(d) + " empty");
  // torch's kernels take exactly one size per spatial dim ("output_size.size() must be 2").
  const Arg& size = c.get("output_size");
  if (size.is_list() && size.list().size() != n)
    c.fail("adaptive_max_pool" + std::to_string(n) + "d: output_size must have " +
           std::to_string(n) + " entries, got " + std::to_string(size.list().size()));
  Ints os = nn::expand_list(size, n, "output_size", c.where(), 0);
  if (std::find(os.begin(), os.end(), 0) != os.end()) {  // as torch: an empty result
    Shape out = x->shape();
    std::copy(os.begin(), os.end(), out.end() - static_cast<std::ptrdiff_t>(n));
    return {g.call("zeros", {Arg(out)}, {{"dtype", Arg(x->dtype())}}),
            g.call("zeros", {Arg(out)}, {{"dtype", Arg(DType::Int64)}})};
  }
  Node* values = x;
  Node* index = nullptr;
  int64_t inner = 1;
  for (size_t i = n; i-- > 0;) {
    int64_t d = rank - static_cast<int64_t>(n) + static_cast<int64_t>(i);
    int64_t L = x->shape()[d], o = os[i];
    if (L == 0) c.fail("adaptive_max_pool: input dimension " + std::to_string(d) + " is empty");
    Arg::List vs, is;
    for (int64_t j = 0; j < o; ++j) {
      int64_t start = (j * L) / o, end = ((j + 1) * L + o - 1) / o;
      Node* sl = slice(g, values, d, start, end);
      Node* a = g.call("argmax.default", {sl, d, true});
      vs.emplace_back(g.call("gather.default", {sl, d, a}));
      Node* coord = g.call("mul.Scalar", {g.call("add.Scalar", {a, start}), inner});
      is.emplace_back(index ? g.call("add.Tensor", {g.call("gather.default", {slice(g, index, d, start, end), d, a}), coord})
                            : coord);
    }
    values = o == 1 ? vs[0].node() : g.call("cat.default", {Arg(vs), d});
    index = o == 1 ? is[0].node() : g.call("cat.default", {Arg(is), d});
    inner *= L;
  }
  return {values, index};
}

// (mantissa, exponent) with x = mantissa * 2^exponent, 0.5 <= |mantissa| < 1 (int32 exponent);
// 0, ±inf and NaN give (x, 0), as std::frexp. exponent = floor(log2|x|) + 1, corrected by one
// where log2 rounds across a power of two; the scaling by 2^-e is exact (two exp2 factors so that
// neither overflows for subnormal or huge x).
std::vector<Node*> frexp(Graph& g, const ExpandCall& c) {
  Node* x = c.tensor("self");
  if (!is_floating(x->dtype())) c.fail("frexp expects a floating-point input, got " + std::string(dtype_name(x->dtype())));
  auto call = [&](const char* op, std::vector<Arg> a) { return g.call(op, std::move(a)); };
  Node* a = call("abs.default", {x});
  Node* regular = call("logical_and.default", {call("isfinite.default", {x}), call("ne.Scalar", {x, 0.0})});
  Node* safe = call("where.ScalarOther", {regular, a, 1.0});
  Node* e = call("add.Scalar", {call("floor.default", {call("log2.default", {safe})}), 1.0});
  auto scale = [&](Node* v, Node* k) {  // v * 2^k, k integral
    Node* h = call("floor.default", {call("mul.Scalar", {k, 0.5})});
    return call("mul.Tensor", {call("mul.Tensor", {v, call("exp2.default", {h})}),
                               call("exp2.default", {call("sub.Tensor", {k, h})})});
  };
  Node* m = scale(x, call("neg.default", {e}));
  Node* big = call("ge.Scalar", {call("abs.default", {m}), 1.0});
  e = call("add.Tensor", {e, call("to.dtype", {big, e->dtype()})});
  m = call("where.self", {big, call("mul.Scalar", {m, 0.5}), m});
  Node* small = call("logical_and.default", {call("lt.Scalar", {call("abs.default", {m}), 0.5}), regular});
  e = call("sub.Tensor", {e, call("to.dtype", {small, e->dtype()})});
  m = call("where.self", {small, call("mul.Scalar", {m, 2.0}), m});
  Node* mantissa = call("where.self", {regular, m, x});
  Node* exponent = call("to.dtype", {call("where.ScalarOther", {regular, e, 0.0}), DType::Int32});
  return {mantissa, exponent};
}

// (values, indices) of cummax / cummin along dim: an inclusive Hillis-Steele scan over
// (value, index) pairs in ceil(log2 n) steps of pointwise selects, each combining a position with
// the one `step` before it (padded with -inf / +inf). The later element wins ties and NaN wins
// everything (a later NaN too), as torch's `isnan(x) || x >= max` loop; this selection is
// associative, so the scan gives the loop's result. Values are selected elements, so the gradient
// reaches the selected input only, as torch's scatter of the gradient by the indices.
std::vector<Node*> cum_extreme(Graph& g, Node* x, int64_t dim_in, bool is_max, const std::string& where) {
  int64_t rank = x->meta().dim();
  if (rank == 0) {
    wrap_dim(dim_in, 1, where);
    return {g.call("clone.default", {x}),
            g.call("zeros.default", {Arg(Ints{})}, {{"dtype", DType::Int64}})};
  }
  int64_t dim = wrap_dim(dim_in, rank, where);
  int64_t n = x->shape()[dim];
  Ints grid(static_cast<size_t>(rank - dim), 1);
  grid[0] = n;
  Node* idx = g.call("expand.default",
                     {g.call("reshape.default", {g.call("arange.default", {n}, {{"dtype", DType::Int64}}),
                                                 Arg(grid)}),
                      Arg(x->shape())});
  Node* val = x;
  // The padding never wins: -inf / +inf, an integer type's extreme, False / True.
  Arg pad;
  if (is_floating(x->dtype()))
    pad = is_max ? -std::numeric_limits<double>::infinity() : std::numeric_limits<double>::infinity();
  else if (x->dtype() == DType::Bool)
    pad = Arg(!is_max);
  else if (x->dtype() == DType::UInt8)
    pad = Arg(int64_t{is_max ? 0 : 255});
  else if (x->dtype() == DType::Int8)
    pad = Arg(int64_t{is_max ? -128 : 127});
  else if (x->dtype() == DType::Int16)
    pad = Arg(int64_t{is_max ? -32768 : 32767});
  else if (x->dtype() == DType::Int32)
    pad = Arg(is_max ? int64_t{std::numeric_limits<int32_t>::min()}
                     : int64_t{std::numeric_limits<int32_t>::max()});
  else
    pad = Arg(is_max ? std::numeric_limits<int64_t>::min() : std::numeric_limits<int64_t>::max());
  auto shift = [&](Node* t, int64_t k, const Arg& fill) {  // t moved k places forward along dim
    Ints p(static_cast<size_t>(2 * (rank - dim)), 0);
    p[p.size() - 2] = k;
    Node* padded = g.call("constant_pad_nd.default", {t, Arg(p), fill});
    return slice(g, padded, dim, 0, n);
  };
  for (int64_t k = 1; k < n; k *= 2) {
    Node* lv = shift(val, k, pad);
    Node* li = shift(idx, k, Arg(int64_t{0}));
    // keep self (the later element) when isnan(self) || (!isnan(left) && self >= left)
    Node* cmp = g.call(is_max ? "ge.Tensor" : "le.Tensor", {val, lv});
    Node* keep = g.call("logical_or.default",
                        {g.call("isnan.default", {val}),
                         g.call("logical_and.default",
                                {g.call("logical_not.default", {g.call("isnan.default", {lv})}), cmp})});
    val = g.call("where.self", {keep, val, lv});
    idx = g.call("where.self", {keep, idx, li});
  }
  if (val == x) val = g.call("clone.default", {x});
  if (idx->op() && idx->op()->name() == "expand.default") idx = g.call("clone.default", {idx});
  return {val, idx};
}

// (values, indices) of mode along dim: the most frequent value (the smallest of equally frequent
// ones) and the largest index where it occurs, as torch's CPU kernel (a sort of (value, index)
// pairs, then a scan of runs keeping the first longest). Here: a stable argsort; run starts
// (where the sorted value changes) carried forward by a cummax scan; the run length at each
// position; its first maximum is the end of the first longest run, whose stable-sort index is the
// largest original index of that value.
std::vector<Node*> mode(Graph& g, const ExpandCall& c) {
  Node* x = c.tensor("self");
  int64_t rank = x->meta().dim();
  bool keepdim = c.get("keepdim").to_bool();
  if (rank == 0) {
    wrap_dim(c.get("dim").to_int(), 1, c.where());
    return {g.call("clone.default", {x}),
            g.call("zeros.default", {Arg(Ints{})}, {{"dtype", DType::Int64}})};
  }
  int64_t dim = wrap_dim(c.get("dim").to_int(), rank, c.where());
  int64_t n = x->shape()[dim];
  if (n == 0) c.fail("mode(): Expected reduction dim " + std::to_string(dim) + " to have non-zero size");
  Node* perm = argsort(g, x, dim, false);
  Node* sorted = g.call("gather.default", {x, dim, perm});
  Ints grid(static_cast<size_t>(rank - dim), 1);
  grid[0] = n;
  Node* pos = g.call("reshape.default", {g.call("arange.default", {n}, {{"dtype", DType::Int64}}), Arg(grid)});
  Node* changed;
  if (n > 1) {
    Node* prev = slice(g, sorted, dim, 0, n - 1);
    Node* next = slice(g, sorted, dim, 1, n);
    Ints first_shape = x->shape();
    first_shape[dim] = 1;
    Node* first = g.call("full.default", {Arg(first_shape), true}, {{"dtype", DType::Bool}});
    changed = g.call("cat.default", {Arg(Arg::List{first, g.call("ne.Tensor", {next, prev})}), dim});
  } else {
    changed = g.call("full.default", {Arg(x->shape()), true}, {{"dtype", DType::Bool}});
  }
  Node* starts = g.call("where.ScalarOther", {changed, pos, int64_t{0}});
  Node* run_start = cum_extreme(g, starts, dim, true, c.where())[0];
  Node* length = g.call("sub.Tensor", {pos, run_start});
  Node* end = g.call("argmax.default", {length, dim, true});
  return {take(g, sorted, dim, end, keepdim), drop(g, g.call("gather.default", {perm, dim, end}), dim, keepdim, x)};
}

// getitem(tuple, i): element i (negative i counts from the end, as Python's).
TensorMeta getitem_rule(const CallArgs& c) {
  const Arg& t = c.get("self");
  if (!t.is_node() || !t.node()->is_tuple())
    c.fail("getitem reads an op returning several tensors (a tuple); %" +
           (t.is_node() ? t.node()->name() + " is a tensor" : arg_str(t) + " is not a node"));
  const auto& metas = t.node()->tuple_metas();
  int64_t n = static_cast<int64_t>(metas.size());
  int64_t i = c.get("idx").to_int();
  if (i < -n || i >= n)
    c.fail("tuple index " + std::to_string(i) + " out of range: %" + t.node()->name() + " (" +
           t.node()->target() + ") has " + std::to_string(n) + " elements");
  return metas[static_cast<size_t>(i < 0 ? i + n : i)];
}

struct MultiOp {
  const char* schema;
  OpCategory category;
  bool differentiable;
  ExpandFn expand;
};

std::vector<MultiOp> multi_ops() {
  using C = OpCategory;
  auto stat = [](std::string s) { return [s](Graph& g, const ExpandCall& c) { return stat_mean(g, c, s); }; };
  auto sizes = [](const char* p) { return [p](Graph& g, const ExpandCall& c) { return split_with_sizes(g, c, p); }; };
  return {
      {"max.dim(Tensor self, int dim, bool keepdim=False) -> (Tensor values, Tensor indices)", C::Reduction, true,
       [](Graph& g, const ExpandCall& c) { return max_min_dim(g, c, true); }},
      {"min.dim(Tensor self, int dim, bool keepdim=False) -> (Tensor values, Tensor indices)", C::Reduction, true,
       [](Graph& g, const ExpandCall& c) { return max_min_dim(g, c, false); }},
      {"sort(Tensor self, int dim=-1, bool descending=False) -> (Tensor values, Tensor indices)", C::Indexing, true, sort},
      {"sort.stable(Tensor self, *, bool? stable, int dim=-1, bool descending=False) -> (Tensor values, Tensor indices)",
       C::Indexing, true, sort},
      {"topk(Tensor self, SymInt k, int dim=-1, bool largest=True, bool sorted=True) -> (Tensor values, Tensor indices)",
       C::Indexing, true, topk},
      {"kthvalue(Tensor self, int k, int dim=-1, bool keepdim=False) -> (Tensor values, Tensor indices)", C::Indexing,
       true, kthvalue},
      {"median.dim(Tensor self, int dim, bool keepdim=False) -> (Tensor values, Tensor indices)", C::Indexing, true,
       median_dim},
      {"nanmedian.dim(Tensor self, int dim, bool keepdim=False) -> (Tensor values, Tensor indices)", C::Indexing,
       true, nanmedian_dim},
      {"split.Tensor(Tensor(a -> *) self, SymInt split_size, int dim=0) -> Tensor(a)[]", C::View, true, split_tensor},
      {"split.sizes(Tensor(a -> *) self, SymInt[] split_size, int dim=0) -> Tensor(a)[]", C::View, true, sizes("split_size")},
      {"split_with_sizes(Tensor(a -> *) self, SymInt[] split_sizes, int dim=0) -> Tensor(a)[]", C::View, true,
       sizes("split_sizes")},
      {"unsafe_split.Tensor(Tensor self, SymInt split_size, int dim=0) -> Tensor[]", C::View, true, split_tensor},
      {"unsafe_split_with_sizes(Tensor self, SymInt[] split_sizes, int dim=0) -> Tensor[]", C::View, true,
       sizes("split_sizes")},
      {"chunk(Tensor(a -> *) self, int chunks, int dim=0) -> Tensor(a)[]", C::View, true, chunk},
      {"tensor_split.sections(Tensor(a -> *) self, SymInt sections, int dim=0) -> Tensor(a)[]", C::View, true,
       tensor_split_sections},
      {"tensor_split.indices(Tensor(a -> *) self, SymInt[] indices, int dim=0) -> Tensor(a)[]", C::View, true,
       tensor_split_indices},
      {"unbind.int(Tensor(a -> *) self, int dim=0) -> Tensor(a)[]", C::View, true, unbind},
      {"var_mean.correction(Tensor self, int[1]? dim=None, *, Scalar? correction=None, bool keepdim=False) -> (Tensor, Tensor)",
       C::Reduction, true, stat("var")},
      {"var_mean.dim(Tensor self, int[1]? dim, bool unbiased=True, bool keepdim=False) -> (Tensor, Tensor)", C::Reduction,
       true, stat("var")},
      {"var_mean(Tensor self, bool unbiased=True) -> (Tensor, Tensor)", C::Reduction, true, stat("var")},
      {"std_mean.correction(Tensor self, int[1]? dim=None, *, Scalar? correction=None, bool keepdim=False) -> (Tensor, Tensor)",
       C::Reduction, true, stat("std")},
      {"std_mean.dim(Tensor self, int[1]? dim, bool unbiased=True, bool keepdim=False) -> (Tensor, Tensor)", C::Reduction,
       true, stat("std")},
      {"std_mean(Tensor self, bool unbiased=True) -> (Tensor, Tensor)", C::Reduction, true, stat("std")},
      {"aminmax(Tensor self, *, int? dim=None, bool keepdim=False) -> (Tensor min, Tensor max)", C::Reduction, true,
       aminmax},
      {"native_layer_norm(Tensor input, SymInt[] normalized_shape, Tensor? weight, Tensor? bias, float eps) -> (Tensor, Tensor, Tensor)",
       C::Composite, true, native_layer_norm},
      {"native_batch_norm(Tensor input, Tensor? weight, Tensor? bias, Tensor? running_mean, Tensor? running_var, bool training, float momentum, float eps) -> (Tensor, Tensor, Tensor)",
       C::Composite, true, native_batch_norm},
      {"native_group_norm(Tensor input, Tensor? weight, Tensor? bias, SymInt N, SymInt C, SymInt HxW, int group, float eps) -> (Tensor, Tensor, Tensor)",
       C::Composite, true, native_group_norm},
      {"nll_loss_forward(Tensor self, Tensor target, Tensor? weight, int reduction, SymInt ignore_index) -> (Tensor output, Tensor total_weight)",
       C::Composite, true, nll_loss_forward},
      {"native_dropout(Tensor input, float p, bool? train) -> (Tensor, Tensor)", C::Random, true,
       native_dropout},
      {"multilabel_margin_loss_forward(Tensor self, Tensor target, int reduction) -> (Tensor output, Tensor is_target)",
       C::Composite, true, multilabel_margin_loss_forward},
      {"rrelu_with_noise_functional(Tensor self, Tensor noise, Scalar lower=0.125, Scalar upper=0.33333333333333331, bool training=False, Generator? generator=None) -> (Tensor, Tensor noise_out)",
       C::Random, true, rrelu_with_noise_functional},
      {"nll_loss2d_forward(Tensor self, Tensor target, Tensor? weight, int reduction, SymInt ignore_index) -> (Tensor output, Tensor total_weight)",
       C::Composite, true, nll_loss_forward},
      {"_native_batch_norm_legit(Tensor input, Tensor? weight, Tensor? bias, Tensor(a!) running_mean, Tensor(b!) running_var, bool training, float momentum, float eps) -> (Tensor, Tensor, Tensor)",
       C::Composite, true,
       [](Graph& g, const ExpandCall& c) { return batch_norm_form(g, c, true, c.get("training").to_bool()); }},
      {"_native_batch_norm_legit.no_stats(Tensor input, Tensor? weight, Tensor? bias, bool training, float momentum, float eps) -> (Tensor, Tensor, Tensor)",
       C::Composite, true,
       [](Graph& g, const ExpandCall& c) { return batch_norm_form(g, c, false, c.get("training").to_bool()); }},
      {"_native_batch_norm_legit_no_training(Tensor input, Tensor? weight, Tensor? bias, Tensor running_mean, Tensor running_var, float momentum, float eps) -> (Tensor, Tensor, Tensor)",
       C::Composite, true, [](Graph& g, const ExpandCall& c) { return batch_norm_form(g, c, true, false); }},
      {"_native_batch_norm_legit_functional(Tensor input, Tensor? weight, Tensor? bias, Tensor running_mean, Tensor running_var, bool training, float momentum, float eps) -> (Tensor, Tensor, Tensor, Tensor running_mean_out, Tensor running_var_out)",
       C::Composite, true,
       [](Graph& g, const ExpandCall& c) { return batch_norm_functional(g, c, c.get("training").to_bool()); }},
      {"_batch_norm_with_update(Tensor input, Tensor? weight, Tensor? bias, Tensor(a!) running_mean, Tensor(b!) running_var, float momentum, float eps) -> (Tensor, Tensor, Tensor, Tensor)",
       C::Composite, true, [](Graph& g, const ExpandCall& c) { return batch_norm_with_update(g, c, false); }},
      {"_batch_norm_with_update_functional(Tensor input, Tensor? weight, Tensor? bias, Tensor running_mean, Tensor running_var, float momentum, float eps) -> (Tensor, Tensor, Tensor, Tensor, Tensor running_mean_out, Tensor running_var_out)",
       C::Composite, true, [](Graph& g, const ExpandCall& c) { return batch_norm_with_update(g, c, true); }},
      {"_batch_norm_no_update(Tensor input, Tensor? weight, Tensor? bias, Tensor? running_mean, Tensor? running_var, float momentum, float eps) -> (Tensor, Tensor, Tensor, Tensor)",
       C::Composite, true, batch_norm_no_update},
      {"log_sigmoid_forward(Tensor self) -> (Tensor output, Tensor buffer)", C::Composite, true,
       log_sigmoid_forward},
      {"max_pool1d_with_indices(Tensor self, int[1] kernel_size, int[1] stride=[], int[1] padding=[0], int[1] dilation=[1], bool ceil_mode=False) -> (Tensor, Tensor)",
       C::Composite, true, [](Graph& g, const ExpandCall& c) { return max_pool_with_indices(g, c, 1); }},
      {"max_pool2d_with_indices(Tensor self, int[2] kernel_size, int[2] stride=[], int[2] padding=0, int[2] dilation=1, bool ceil_mode=False) -> (Tensor, Tensor)",
       C::Composite, true, [](Graph& g, const ExpandCall& c) { return max_pool_with_indices(g, c, 2); }},
      {"max_pool3d_with_indices(Tensor self, int[3] kernel_size, int[3] stride=[], int[3] padding=0, int[3] dilation=1, bool ceil_mode=False) -> (Tensor, Tensor)",
       C::Composite, true, [](Graph& g, const ExpandCall& c) { return max_pool_with_indices(g, c, 3); }},
      {"cummax(Tensor self, int dim) -> (Tensor values, Tensor indices)", C::Composite, true,
       [](Graph& g, const ExpandCall& c) { return cum_extreme(g, c.tensor("self"), c.get("dim").to_int(), true, c.where()); }},
      {"cummin(Tensor self, int dim) -> (Tensor values, Tensor indices)", C::Composite, true,
       [](Graph& g, const ExpandCall& c) { return cum_extreme(g, c.tensor("self"), c.get("dim").to_int(), false, c.where()); }},
      {"mode(Tensor self, int dim=-1, bool keepdim=False) -> (Tensor values, Tensor indices)", C::Indexing, true, mode},
      {"frexp.Tensor(Tensor self) -> (Tensor mantissa, Tensor exponent)", C::Composite, true, frexp},
      {"adaptive_max_pool1d(Tensor self, int[1] output_size) -> (Tensor, Tensor)", C::Composite, true,
       [](Graph& g, const ExpandCall& c) { return adaptive_max_pool(g, c, 1); }},
      {"adaptive_max_pool2d(Tensor self, int[2] output_size) -> (Tensor, Tensor)", C::Composite, true,
       [](Graph& g, const ExpandCall& c) { return adaptive_max_pool(g, c, 2); }},
      {"adaptive_max_pool3d(Tensor self, int[3] output_size) -> (Tensor, Tensor)", C::Composite, true,
       [](Graph& g, const ExpandCall& c) { return adaptive_max_pool(g, c, 3); }},
  };
}

}  // namespace

void register_multi_output_ops(OpRegistry& r) {
  r.add("getitem(Tensor self, int idx) -> Tensor", OpCategory::View, Promotion::None, getitem_rule);
  for (auto& op : multi_ops()) {
    OpSchema s = parse_schema(op.schema);
    r.add_multi(op.schema, op.category, infer_by_expansion(s.name)).differentiable = op.differentiable;
  }
}

void register_multi_output_expansions(ExpansionTable& t) {
  for (auto& op : multi_ops()) t.add(parse_schema(op.schema).name, op.expand);
}

}  // namespace stax
