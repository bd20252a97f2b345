// linalg.eig / linalg.eigvals of real matrices (docs/linalg.md, docs/complex.md): LAPACK's geev,
// as torch's CPU kernel calls it (right eigenvectors only), with complex results. A complex
// eigenvalue pair's vectors come packed as two real columns (v ± i w); they are unpacked into
// complex columns, each of unit norm with its largest component real, as LAPACK normalizes them.
//   linalg_eig(self) -> (eigenvalues, eigenvectors)  expands to _stax_linalg_eig(A, output)
//   linalg_eigvals(self)                             _stax_linalg_eig's eigenvalues
// Real matrices only (complex inputs would need LAPACK's cgeev / zgeev); their VJP rules refuse
// (torch's linalg_eig_backward is not implemented), naming the op.
#include <complex>
#include <string>
#include <vector>

#include "core/autodiff/vjp.h"
#include "core/graph/multi_output.h"
#include "core/interpreter/interpreter.h"
#include "core/ops/linalg/lapack.h"
#include "core/ops/linalg/linalg_args.h"
#include "core/ops/linalg/matrices.h"
#include "core/ops/registration.h"

namespace stax {
namespace {

using namespace linalg;

// output 0: the eigenvalues (*, n); 1: the eigenvectors (*, n, n); complex of A's precision.
TensorMeta eig_meta(const CallArgs& c, const TensorMeta& a, int64_t output, const char* api) {
  if (is_complex(a.dtype))
    c.fail(std::string(api) + ": complex input matrices are not supported yet (they need LAPACK's "
           "cgeev / zgeev; docs/complex.md)");
  need_float(c, a, api);
  need_square(c, a, api, "A");
  Shape s = output == 1 ? a.sizes : Shape(a.sizes.begin(), a.sizes.end() - 1);
  return TensorMeta::contiguous(std::move(s), real_to_complex(a.dtype), a.device);
}

// Matrix b's eigenvalues (and right eigenvectors when `vectors`) into out (row-major).
template <class T>
void eig_one(const Tensor& a, int64_t b, bool vectors, std::complex<T>* out,
             const std::string& where) {
  int64_t n = a.size(-1);
  std::vector<T> buf = load<T>(a, b);
  std::vector<T> wr(static_cast<size_t>(n)), wi(static_cast<size_t>(n));
  std::vector<T> vr(static_cast<size_t>(vectors ? n * n : 1));
  int info = lapack::geev<T>(vectors ? 'V' : 'N', lapack_int(n, where), buf.data(), ld(n),
                             wr.data(), wi.data(), vr.data(), vectors ? ld(n) : 1);
  if (info > 0)
    throw Error("runtime", where,
                "linalg.eig: The algorithm failed to converge because the input matrix is "
                "ill-conditioned or has too many repeated eigenvalues (error code: " +
                    std::to_string(info) + ").");
  if (!vectors) {
    for (int64_t j = 0; j < n; ++j) out[j] = {wr[j], wi[j]};
    return;
  }
  for (int64_t j = 0; j < n; ++j) {
    for (int64_t i = 0; i < n; ++i) {
      T re = vr[i + j * n];
      if (wi[j] == T(0)) {
        out[i * n + j] = {re, T(0)};
      } else if (wi[j] > T(0)) {  // columns j, j+1: v + i w and v - i w
        T im = vr[i + (j + 1) * n];
        out[i * n + j] = {re, im};
        out[i * n + j + 1] = {re, -im};
      }
    }
    if (wi[j] > T(0)) ++j;
  }
}

Tensor eig_kernel(const KernelContext& c, int64_t output) {
  const Tensor a = c.tensor(c.node().op()->schema.params[0].name).contiguous();
  Tensor out = Tensor::empty(c.out_meta().sizes, c.out_meta().dtype);
  std::string where = "%" + c.node().name();
  int64_t n = a.size(-1);
  if (n == 0) return out;
  by_float_type(a.dtype(), where, [&](auto tag) {
    using T = decltype(tag);
    auto* o = out.data<std::complex<T>>();
    int64_t per = output == 1 ? n * n : n;
    for (int64_t b = 0; b < batch_count(a.sizes()); ++b)
      eig_one<T>(a, b, output == 1, o + b * per, where);
  });
  return out;
}

std::vector<Node*> eig_expansion(Graph& g, const ExpandCall& c) {
  Node* a = c.tensor("self");
  return {g.call("_stax_linalg_eig", {a, int64_t{0}}), g.call("_stax_linalg_eig", {a, int64_t{1}})};
}

constexpr const char* kEig =
    "linalg_eig(Tensor self) -> (Tensor eigenvalues, Tensor eigenvectors)";

}  // namespace

void register_linalg_eig_ops(OpRegistry& r) {
  r.add("_stax_linalg_eig(Tensor A, int output) -> Tensor", OpCategory::Extern, Promotion::None,
        [](const CallArgs& c) {
          return eig_meta(c, c.tensor("A"), c.get("output").to_int(), "linalg.eig");
        })
      .complex = true;
  r.add("linalg_eigvals(Tensor self) -> Tensor", OpCategory::Extern, Promotion::None,
        [](const CallArgs& c) { return eig_meta(c, c.tensor("self"), 0, "linalg.eigvals"); })
      .complex = true;
  r.add_multi(kEig, OpCategory::Composite, infer_by_expansion(parse_schema(kEig).name)).complex =
      true;
}

void register_linalg_eig_expansions(ExpansionTable& t) {
  t.add(parse_schema(kEig).name, eig_expansion);
}

// torch's linalg_eig_backward is not implemented: a clear error rather than a zero gradient.
void register_linalg_eig_vjps(VjpTable& t) {
  for (const char* op : {"_stax_linalg_eig.default", "linalg_eigvals.default"})
    t.add(op, [](VjpContext& c) {
      throw Error("autodiff", "%" + c.node()->name(),
                  "the derivative of linalg.eig / linalg.eigvals is not implemented in Stax");
    });
}

void register_linalg_eig_kernels(InterpreterTable& t) {
  t.add("_stax_linalg_eig.default",
        [](const KernelContext& c) { return eig_kernel(c, c.arg("output").to_int()); });
  t.add("linalg_eigvals.default", [](const KernelContext& c) { return eig_kernel(c, 0); });
}

}  // namespace stax
