// The tuple-valued linear-algebra ops of aten, as make_fx records them (linalg.det ->
// _linalg_det, linalg.inv -> linalg_inv_ex ...), expanded to one node per result
// (core/graph/multi_output.h): each result is a Stax element op (_stax_linalg_*, schemas.cpp)
// or built from them, so every later stage (autodiff, the partitioner, lowering) sees
// single-result ops. Results a call does not use are dead nodes and never run.
#include <algorithm>
#include <string>
#include <vector>

#include "core/graph/multi_output.h"
#include "core/ops/linalg/error_checks.h"
#include "core/ops/linalg/linalg_args.h"
#include "core/ops/linalg/packed_factors.h"
#include "core/ops/registration.h"

namespace stax {

namespace {

using namespace linalg;
using Ints = std::vector<int64_t>;

Node* part(Graph& g, const char* op, std::vector<Arg> args, int64_t output) {
  args.emplace_back(output);
  return g.call(op, std::move(args));
}

// One factorization op(args..., output) of a call: when the graph reads two or more of its
// results (`reads`), one packed node computes it and every element reads it (packed_factors.h);
// else each element computes its own result.
class Factorization {
 public:
  Factorization(Graph& g, const char* op, std::vector<Arg> args, int reads)
      : g_(g), op_(op), args_(std::move(args)), packed_(packed_if_shared(g, op, args_, reads)) {}
  Node* part(int64_t output) const {
    std::vector<Arg> a = args_;
    a.emplace_back(output);
    if (packed_) a.emplace_back(packed_);
    return g_.call(op_, std::move(a));
  }
  // Arg for the `factors` parameter of an op reading this factorization (None when unshared).
  Arg factors() const { return packed_ ? Arg(packed_) : Arg(); }

 private:
  Graph& g_;
  const char* op_;
  std::vector<Arg> args_;
  Node* packed_;
};

// Whether the graph reads element `e` of the call being expanded: expand_multi_output puts the
// graph's insert point on the tuple node, whose users are the getitems reading its elements. In
// the scratch graph of shape inference there is none, and every element counts as read.
bool used(const Graph& g, int64_t e) {
  const Node* t = g.insert_point();
  if (!t || !t->is_tuple()) return true;
  for (const Node* u : t->users())
    if (u->is_call() && u->args().size() > 1 && u->args()[1].is_int()) {
      int64_t k = u->args()[1].to_int();
      if (k == e || k + static_cast<int64_t>(t->tuple_metas().size()) == e) return true;
    }
  return false;
}

// How many of `elements` the graph reads, plus `more` (a check reading the info).
int reads(const Graph& g, std::initializer_list<int64_t> elements, int more = 0) {
  int n = more;
  for (int64_t e : elements) n += used(g, e) ? 1 : 0;
  return n;
}

// The *_ex forms with check_errors=True raise as torch's (error_checks.cpp).
void check_if_asked(Graph& g, const ExpandCall& c, Node* info, const char* api, Node* a) {
  if (c.get("check_errors").to_bool()) add_error_check(g, info, api, a->shape().size() == 2);
}

bool asked_to_check(const ExpandCall& c) { return c.get("check_errors").to_bool(); }

Node* empty_result(Graph& g, DType t) { return g.call("zeros", {Arg(Shape{0})}, {{"dtype", t}}); }

Node* expand_batch(Graph& g, Node* x, const Shape& batch) {
  Shape want = with_matrix(batch, rows(x->shape()), cols(x->shape()));
  return want == x->shape() ? x : g.call("expand", {x, want});
}

std::vector<Node*> lu_factor_ex(Graph& g, const ExpandCall& c) {
  if (!c.get("pivot").to_bool())
    c.fail("linalg.lu_factor: LU without pivoting is not implemented on the CPU");
  Node* a = c.tensor("A");
  Factorization lu(g, "_stax_linalg_lu", {a}, reads(g, {0, 1, 2}, asked_to_check(c)));
  Node* info = lu.part(kInfo);
  check_if_asked(g, c, info, "torch.linalg.lu_factor_ex", a);
  return {lu.part(kLU), lu.part(kPivots), info};
}

std::vector<Node*> det(Graph& g, const ExpandCall& c) {
  Node* a = c.tensor("A");
  Factorization lu(g, "_stax_linalg_lu", {a}, reads(g, {0, 1, 2}));
  return {g.call("_stax_linalg_det", {a, int64_t{kDet}, lu.factors()}), lu.part(kLU),
          lu.part(kPivots)};
}

std::vector<Node*> slogdet(Graph& g, const ExpandCall& c) {
  Node* a = c.tensor("A");
  Factorization lu(g, "_stax_linalg_lu", {a}, reads(g, {0, 1, 2, 3}));
  return {g.call("_stax_linalg_det", {a, int64_t{kSign}, lu.factors()}),
          g.call("_stax_linalg_det", {a, int64_t{kLogAbsDet}, lu.factors()}), lu.part(kLU),
          lu.part(kPivots)};
}

std::vector<Node*> inv_ex(Graph& g, const ExpandCall& c) {
  Node* a = c.tensor("A");
  const Shape& s = a->shape();
  if (s.size() < 2 || rows(s) != cols(s))
    c.fail("linalg.inv: A must be batches of square matrices, but they are " +
           (s.size() < 2 ? std::string("not") : std::to_string(rows(s)) + " by " +
                                                     std::to_string(cols(s))) +
           " matrices");
  Node* eye = g.call("eye", {rows(s)}, {{"dtype", a->dtype()}});
  Factorization lu(g, "_stax_linalg_lu", {a}, reads(g, {0, 1}, asked_to_check(c)));
  Node* info = lu.part(kInfo);
  check_if_asked(g, c, info, "linalg.inv_ex", a);
  return {g.call("_stax_linalg_solve", {a, eye, true, lu.factors()}), info};
}

std::vector<Node*> solve_ex(Graph& g, const ExpandCall& c) {
  Node* a = c.tensor("A");
  Node* b = c.tensor("B");
  bool left = c.get("left").to_bool();
  if (a->shape().size() < 2) c.fail("linalg.solve: The input tensor A must have at least 2 dimensions.");
  bool vector = is_vector_rhs(a->shape(), b->shape());
  if (vector && !left) {  // torch reads a vector B as a column, which XA = B cannot take
    std::string n = std::to_string(rows(a->shape()));
    c.fail("linalg.solve: Incompatible shapes of A and B for the equation XA = B (" + n + "x" + n +
           " and " + n + "x1)");
  }
  int64_t vdim = left ? -1 : -2;
  Node* bm = vector ? g.call("unsqueeze", {b, vdim}) : b;
  // LU, pivots and info are of A broadcast over the batch of B, as torch's. (The solve's own
  // inference checks A and B first, with torch's messages; that node, unused, goes.)
  Shape batch = batch_of(g.call("_stax_linalg_solve", {a, bm, left})->shape());
  Node* ab = expand_batch(g, a, batch);
  Factorization lu(g, "_stax_linalg_lu", {ab}, reads(g, {0, 1, 2, 3}, asked_to_check(c)));
  Node* xm = g.call("_stax_linalg_solve", {a, bm, left, lu.factors()});
  Node* x = vector ? g.call("squeeze.dim", {xm, vdim}) : xm;
  Node* info = lu.part(kInfo);
  check_if_asked(g, c, info, "torch.linalg.solve_ex", a);
  return {x, lu.part(kLU), lu.part(kPivots), info};
}

std::vector<Node*> cholesky_ex(Graph& g, const ExpandCall& c) {
  Node* a = c.tensor("self");
  bool upper = c.get("upper").to_bool();
  Factorization f(g, "_stax_linalg_cholesky", {a, upper}, reads(g, {0, 1}, asked_to_check(c)));
  Node* info = f.part(1);
  check_if_asked(g, c, info, "linalg.cholesky_ex", a);
  return {f.part(0), info};
}

std::vector<Node*> qr(Graph& g, const ExpandCall& c) {
  Node* a = c.tensor("A");
  const std::string& mode = c.get("mode").str();
  Factorization f(g, "_stax_linalg_qr", {a, mode}, mode == "r" ? 1 : reads(g, {0, 1}));
  return {f.part(0), f.part(1)};
}

std::vector<Node*> eigh(Graph& g, const ExpandCall& c) {
  Node* a = c.tensor("A");
  const std::string& uplo = c.get("UPLO").str();
  if (!c.get("compute_v").to_bool())
    return {part(g, "_stax_linalg_eigh", {a, uplo}, 0), empty_result(g, a->dtype())};
  Factorization f(g, "_stax_linalg_eigh", {a, uplo}, reads(g, {0, 1}));
  return {f.part(0), f.part(1)};
}

std::vector<Node*> svd(Graph& g, const ExpandCall& c) {
  Node* a = c.tensor("A");
  if (c.has("driver"))
    c.fail("torch.linalg.svd: keyword argument `driver=` is only supported on CUDA inputs with "
           "cuSOLVER backend.");
  bool full = c.get("full_matrices").to_bool();
  if (!c.get("compute_uv").to_bool())
    return {empty_result(g, a->dtype()), part(g, "_stax_linalg_svd", {a, false}, kS),
            empty_result(g, a->dtype())};
  Factorization f(g, "_stax_linalg_svd", {a, full}, reads(g, {0, 1, 2}));
  return {f.part(kU), f.part(kS), f.part(kVh)};
}

std::vector<Node*> triangular_solve(Graph& g, const ExpandCall& c) {
  Node* b = c.tensor("self");
  Node* a = c.tensor("A");
  for (Node* x : {b, a})
    if (x->shape().size() < 2)
      c.fail(std::string("torch.triangular_solve: Expected ") + (x == b ? "b" : "A") +
             " to have at least 2 dimensions, but it has " +
             std::to_string(x->shape().size()) + " dimensions instead");
  bool upper = c.get("upper").to_bool();
  bool transpose = c.get("transpose").to_bool();
  Node* op = transpose ? g.call("transpose.int", {a, int64_t{-2}, int64_t{-1}}) : a;
  Node* x = g.call("linalg_solve_triangular", {op, b},
                   {{"upper", upper != transpose}, {"unitriangular", c.get("unitriangular")}});
  Node* coefficient = g.call("clone", {expand_batch(g, a, batch_of(x->shape()))});
  return {x, coefficient};
}

// P, L, U of a packed LU factorization (m x n, k = min(m, n)): L is m x k with a unit diagonal,
// U k x n.
std::vector<Node*> unpack(Graph& g, Node* lu, Node* pivots, bool data, bool perm) {
  const Shape& s = lu->shape();
  int64_t m = rows(s), n = cols(s), k = std::min(m, n);
  Node* p = perm ? g.call("_stax_lu_permutation", {lu, pivots}) : empty_result(g, lu->dtype());
  if (!data) return {p, empty_result(g, lu->dtype()), empty_result(g, lu->dtype())};
  Node* l = g.call("tril", {g.call("slice.Tensor", {lu, int64_t{-1}, int64_t{0}, k}), int64_t{-1}});
  l = g.call("add.Tensor", {l, g.call("eye.m", {m, k}, {{"dtype", lu->dtype()}})});
  Node* u = g.call("triu", {g.call("slice.Tensor", {lu, int64_t{-2}, int64_t{0}, k})});
  return {p, l, u};
}

std::vector<Node*> linalg_lu(Graph& g, const ExpandCall& c) {
  if (!c.get("pivot").to_bool())
    c.fail("linalg.lu: LU without pivoting is not implemented on the CPU");
  Node* a = c.tensor("A");
  // P reads LU and pivots, L and U read LU
  Factorization lu(g, "_stax_linalg_lu", {a}, used(g, 0) ? 2 : 1);
  return unpack(g, lu.part(kLU), lu.part(kPivots), true, true);
}

std::vector<Node*> lu_unpack(Graph& g, const ExpandCall& c) {
  Node* lu = c.tensor("LU_data");
  if (lu->shape().size() < 2)
    c.fail("torch.lu_unpack: Expected LU_data to have at least 2 dimensions, but it has " +
           std::to_string(lu->shape().size()) + " dimensions instead");
  if (c.get("unpack_pivots").to_bool() && c.tensor("LU_pivots")->dtype() != DType::Int32)
    c.fail("torch.lu_unpack: LU_pivots is expected to be a contiguous tensor of torch.int32 "
           "dtype. Note: this function is intended to be used with the output produced by "
           "torch.linalg.lu_factor");
  return unpack(g, c.tensor("LU_data"), c.tensor("LU_pivots"), c.get("unpack_data").to_bool(),
                c.get("unpack_pivots").to_bool());
}

std::vector<Node*> geqrf(Graph& g, const ExpandCall& c) {
  Node* a = c.tensor("self");
  Factorization f(g, "_stax_linalg_geqrf", {a}, reads(g, {0, 1}));
  return {f.part(0), f.part(1)};
}

std::vector<Node*> ldl_factor_ex(Graph& g, const ExpandCall& c) {
  Node* a = c.tensor("self");
  Factorization f(g, "_stax_linalg_ldl", {a}, reads(g, {0, 1, 2}, asked_to_check(c)));
  Node* info = f.part(kInfo);
  check_if_asked(g, c, info, "torch.linalg.ldl_factor_ex", a);
  return {f.part(kLU), f.part(kPivots), info};
}

// torch raises here when an info entry is not 0 (a singular matrix, one not positive definite):
// the check goes onto an output of the graph (error_checks.cpp, docs/linalg.md "Errors").
std::vector<Node*> check_errors(Graph& g, const ExpandCall& c) {
  add_error_check(g, c.tensor("info"), c.get("api_name").str(), c.get("is_matrix").to_bool());
  return {};
}

struct Multi {
  const char* schema;
  ExpandFn fn;
};

std::vector<Multi> multi_ops() {
  return {
      {"linalg_lu_factor_ex(Tensor A, *, bool pivot=True, bool check_errors=False) -> (Tensor LU, "
       "Tensor pivots, Tensor info)", lu_factor_ex},
      {"_linalg_det(Tensor A) -> (Tensor result, Tensor LU, Tensor pivots)", det},
      {"_linalg_slogdet(Tensor A) -> (Tensor sign, Tensor logabsdet, Tensor LU, Tensor pivots)",
       slogdet},
      {"linalg_inv_ex(Tensor A, *, bool check_errors=False) -> (Tensor inverse, Tensor info)",
       inv_ex},
      {"_linalg_solve_ex(Tensor A, Tensor B, *, bool left=True, bool check_errors=False) -> "
       "(Tensor result, Tensor LU, Tensor pivots, Tensor info)", solve_ex},
      {"linalg_cholesky_ex(Tensor self, *, bool upper=False, bool check_errors=False) -> (Tensor "
       "L, Tensor info)", cholesky_ex},
      {"linalg_qr(Tensor A, str mode=\"reduced\") -> (Tensor Q, Tensor R)", qr},
      {"_linalg_eigh(Tensor A, str UPLO=\"L\", bool compute_v=True) -> (Tensor eigenvalues, "
       "Tensor eigenvectors)", eigh},
      {"_linalg_svd(Tensor A, bool full_matrices=False, bool compute_uv=True, *, str? "
       "driver=None) -> (Tensor U, Tensor S, Tensor Vh)", svd},
      {"triangular_solve(Tensor self, Tensor A, bool upper=True, bool transpose=False, bool "
       "unitriangular=False) -> (Tensor solution, Tensor cloned_coefficient)", triangular_solve},
      {"linalg_lu(Tensor A, *, bool pivot=True) -> (Tensor P, Tensor L, Tensor U)", linalg_lu},
      {"lu_unpack(Tensor LU_data, Tensor LU_pivots, bool unpack_data=True, bool "
       "unpack_pivots=True) -> (Tensor P, Tensor L, Tensor U)", lu_unpack},
      {"geqrf(Tensor self) -> (Tensor a, Tensor tau)", geqrf},
      {"linalg_ldl_factor_ex(Tensor self, *, bool hermitian=False, bool check_errors=False) -> "
       "(Tensor LD, Tensor pivots, Tensor info)", ldl_factor_ex},
      {"_linalg_check_errors(Tensor info, str api_name, *, bool is_matrix) -> ()", check_errors},
  };
}

}  // namespace

void register_linalg_multi_output_ops(OpRegistry& r) {
  for (const Multi& m : multi_ops())
    r.add_multi(m.schema, OpCategory::Composite, infer_by_expansion(parse_schema(m.schema).name));
}

void register_linalg_expansions(ExpansionTable& t) {
  for (const Multi& m : multi_ops()) t.add(parse_schema(m.schema).name, m.fn);
}

}  // namespace stax
