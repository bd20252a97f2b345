#include "plugins/cpu_cpp/extern_kernels.h"

#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "plugins/cpu_cpp/gemm_library.h"
#include "stax/sdk/half_bits.hpp"

namespace stax::cpu {

namespace {

using sdk::DType;
using sdk::PluginError;
using sdk::TensorView;

[[noreturn]] void bad(const std::string& kernel, const std::string& what) {
  throw PluginError(STAX_ERROR_INVALID_ARGUMENT, "cpu_cpp extern kernel '" + kernel + "': " + what);
}

std::string shape_str(const std::vector<int64_t>& s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
  return out + "]";
}

// ---- element types ---------------------------------------------------------------------------

struct Half {
  uint16_t bits;
};
struct BF16 {
  uint16_t bits;
};

template <class T>
float to_float(T v) {
  if constexpr (std::is_same_v<T, Half>)
    return stax_f16::half_to_float(v.bits);
  else if constexpr (std::is_same_v<T, BF16>)
    return stax_f16::bf16_to_float(v.bits);
  else
    return static_cast<float>(v);
}
template <class T>
T from_float(float f) {
  if constexpr (std::is_same_v<T, Half>)
    return Half{stax_f16::float_to_half(f)};
  else if constexpr (std::is_same_v<T, BF16>)
    return BF16{stax_f16::float_to_bf16(f)};
  else
    return static_cast<T>(f);
}

template <class F>
void dispatch(DType d, F&& f) {
  switch (d) {
    case DType::Float32: return f(float{});
    case DType::Float64: return f(double{});
    case DType::Float16: return f(Half{});
    case DType::BFloat16: return f(BF16{});
    case DType::Int64: return f(int64_t{});
    case DType::Int32: return f(int32_t{});
    case DType::Int8: return f(int8_t{});
    case DType::UInt8: return f(uint8_t{});
    case DType::Bool: return f(bool{});
    case DType::Int16: return f(int16_t{});
    case DType::UInt16: return f(uint16_t{});
    case DType::UInt32: return f(uint32_t{});
    case DType::UInt64: return f(uint64_t{});
  }
}

// ---- operands ----------------------------------------------------------------------------------

// A tensor seen as (batch..., rows, cols) with strides in elements; a 1-D operand is a row or a
// column, a missing matrix dimension has extent 1 and stride 0.
struct Mat {
  const TensorView* t = nullptr;
  std::vector<int64_t> batch, batch_strides;
  int64_t rows = 1, cols = 1, rs = 0, cs = 0;
};

Mat operand(const TensorView& t, bool as_row) {
  Mat m;
  m.t = &t;
  size_t r = t.sizes.size();
  if (r == 1) {
    if (as_row) {
      m.cols = t.sizes[0];
      m.cs = t.strides[0];
    } else {
      m.rows = t.sizes[0];
      m.rs = t.strides[0];
    }
    return m;
  }
  m.batch.assign(t.sizes.begin(), t.sizes.end() - 2);
  m.batch_strides.assign(t.strides.begin(), t.strides.end() - 2);
  m.rows = t.sizes[r - 2];
  m.cols = t.sizes[r - 1];
  m.rs = t.strides[r - 2];
  m.cs = t.strides[r - 1];
  return m;
}

// The result of a @ b as a Mat over the output tensor (its unit dims dropped where an operand was
// 1-D), with the batch dims it must have.
Mat result(const TensorView& out, const TensorView& a, const TensorView& b) {
  Mat m;
  m.t = &out;
  size_t r = out.sizes.size();
  size_t mat_dims = (a.sizes.size() >= 2 ? 1 : 0) + (b.sizes.size() >= 2 ? 1 : 0);
  if (r < mat_dims) return m;
  m.batch.assign(out.sizes.begin(), out.sizes.end() - static_cast<long>(mat_dims));
  m.batch_strides.assign(out.strides.begin(), out.strides.end() - static_cast<long>(mat_dims));
  size_t d = r - mat_dims;
  if (a.sizes.size() >= 2) {
    m.rows = out.sizes[d];
    m.rs = out.strides[d];
    ++d;
  }
  if (b.sizes.size() >= 2) {
    m.cols = out.sizes[d];
    m.cs = out.strides[d];
  }
  return m;
}

// m's batch strides when broadcast to `batch` (0 on broadcast dims).
std::vector<int64_t> broadcast_strides(const Mat& m, const std::vector<int64_t>& batch) {
  std::vector<int64_t> s(batch.size(), 0);
  size_t off = batch.size() - m.batch.size();
  for (size_t i = 0; i < m.batch.size(); ++i)
    if (m.batch[i] != 1) s[off + i] = m.batch_strides[i];
  return s;
}

// ---- one product -------------------------------------------------------------------------------

// c[i*crs + j*ccs] = sum_p a[i*ars + p*acs] * b[p*brs + j*bcs] for an n x k by k x m product,
// for the dtypes without a GEMM library (float16 / bfloat16 accumulate in double, integers wrap,
// bool is or-of-ands), as the interpreter computes them.
template <class T>
void loop_product(const T* a, int64_t ars, int64_t acs, const T* b, int64_t brs, int64_t bcs, T* c,
                  int64_t crs, int64_t ccs, int64_t n, int64_t k, int64_t m) {
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < m; ++j) {
      T* out = c + i * crs + j * ccs;
      if constexpr (std::is_same_v<T, bool>) {
        bool acc = false;
        for (int64_t p = 0; p < k && !acc; ++p) acc = a[i * ars + p * acs] && b[p * brs + j * bcs];
        *out = acc;
      } else if constexpr (std::is_integral_v<T>) {
        uint64_t acc = 0;
        for (int64_t p = 0; p < k; ++p)
          acc += static_cast<uint64_t>(static_cast<int64_t>(a[i * ars + p * acs])) *
                 static_cast<uint64_t>(static_cast<int64_t>(b[p * brs + j * bcs]));
        *out = static_cast<T>(acc);
      } else {
        double acc = 0;
        for (int64_t p = 0; p < k; ++p)
          acc += static_cast<double>(to_float(a[i * ars + p * acs])) *
                 static_cast<double>(to_float(b[p * brs + j * bcs]));
        *out = from_float<T>(static_cast<float>(acc));
      }
    }
}

// Whether t's elements lie in row-major order one after another (flat index = offset + e).
bool contiguous(const TensorView& t) {
  int64_t expect = 1;
  for (size_t d = t.sizes.size(); d-- > 0;) {
    if (t.sizes[d] != 1 && t.strides[d] != expect) return false;
    expect *= t.sizes[d];
  }
  return true;
}

// out = a @ b with batch broadcasting; out's batch dims must equal the broadcast batch. `rows`
// is called for every finished block of rows (e, r0, r1) of the flattened batch.
void matmul(const std::string& kernel, const TensorView& ta, const TensorView& tb,
            const TensorView& tout, GemmLibrary& gemm, const sdk::gemm::RowsDone& rows) {
  if (ta.sizes.empty() || tb.sizes.empty()) bad(kernel, "operands must be at least 1-D");
  if (ta.dtype != tb.dtype || tout.dtype != ta.dtype)
    bad(kernel, "operands and result must share one dtype");
  Mat a = operand(ta, true), b = operand(tb, false), c = result(tout, ta, tb);
  if (a.cols != b.rows)
    bad(kernel, "shapes cannot be multiplied (" + shape_str(ta.sizes) + " and " +
                    shape_str(tb.sizes) + ")");
  std::vector<int64_t> batch(std::max(a.batch.size(), b.batch.size()), 1);
  for (const Mat* m : {&a, &b}) {
    size_t off = batch.size() - m->batch.size();
    for (size_t i = 0; i < m->batch.size(); ++i) {
      int64_t s = m->batch[i];
      if (s == 1) continue;
      if (batch[off + i] != 1 && batch[off + i] != s)
        bad(kernel, "batch dimensions do not broadcast (" + shape_str(ta.sizes) + " and " +
                        shape_str(tb.sizes) + ")");
      batch[off + i] = s;
    }
  }
  if (c.batch != batch || c.rows != a.rows || c.cols != b.cols)
    bad(kernel, "result shape " + shape_str(tout.sizes) + " does not match operands " +
                    shape_str(ta.sizes) + " and " + shape_str(tb.sizes));
  std::vector<int64_t> as = broadcast_strides(a, batch), bs = broadcast_strides(b, batch);
  const std::vector<int64_t>& cs = c.batch_strides;
  int64_t count = 1;
  for (int64_t s : batch) count *= s;
  // The element offsets of every entry of the batch (row-major over the batch dims).
  std::vector<int64_t> oa(static_cast<size_t>(count)), ob(oa.size()), oc(oa.size());
  std::vector<int64_t> idx(batch.size(), 0);
  for (int64_t e = 0; e < count; ++e) {
    for (size_t d = 0; d < batch.size(); ++d) {
      oa[e] += idx[d] * as[d];
      ob[e] += idx[d] * bs[d];
      oc[e] += idx[d] * cs[d];
    }
    for (size_t d = batch.size(); d-- > 0;) {
      if (++idx[d] < batch[d]) break;
      idx[d] = 0;
    }
  }
  dispatch(ta.dtype, [&](auto tag) {
    using T = decltype(tag);
    const T* pa = static_cast<const T*>(ta.data) + ta.offset;
    const T* pb = static_cast<const T*>(tb.data) + tb.offset;
    T* pc = static_cast<T*>(tout.data) + tout.offset;
    if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
      sdk::gemm::Problem<T> p;
      p.batch = count;
      p.m = a.rows;
      p.n = b.cols;
      p.k = a.cols;
      p.a = pa;
      p.a_rs = a.rs;
      p.a_cs = a.cs;
      p.a_offsets = oa.data();
      p.b = pb;
      p.b_rs = b.rs;
      p.b_cs = b.cs;
      p.b_offsets = ob.data();
      p.c = pc;
      p.c_rs = c.rs;
      p.c_cs = c.cs;
      p.c_offsets = oc.data();
      try {
        gemm.multiply(p, rows);
      } catch (const sdk::gemm::OutOfMemory& e) {
        throw PluginError(STAX_ERROR_RUNTIME,
                          "cpu_cpp extern kernel '" + kernel + "': " + e.what() + " (" +
                              gemm.describe() + ", product " + shape_str(ta.sizes) + " @ " +
                              shape_str(tb.sizes) + ")");
      }
    } else {
      for (int64_t e = 0; e < count; ++e)
        loop_product<T>(pa + oa[e], a.rs, a.cs, pb + ob[e], b.rs, b.cs, pc + oc[e], c.rs, c.cs,
                        a.rows, a.cols, b.cols);
      if (rows && a.rows > 0 && b.cols > 0)
        for (int64_t e = 0; e < count; ++e) rows(e, 0, a.rows);
    }
  });
}

// o[j] = s[j] + o[j] for j < m (s_step 1) or s[0] + o[j] (s_step 0): nn.Linear's bias on one
// row. The loop vectoriser at its full cost model: at -O2 GCC left this loop scalar (2.7% of a
// GPT block's training step).
#pragma GCC push_options
#pragma GCC optimize("O3")
template <class T>
void add_bias_row(T* __restrict o, const T* __restrict s, int64_t s_step, int64_t m) {
  if (s_step == 1)
    for (int64_t j = 0; j < m; ++j) o[j] = s[j] + o[j];
  else
    for (int64_t j = 0; j < m; ++j) o[j] = s[0] + o[j];
}
#pragma GCC pop_options

// Rows [r0, r1) of out = beta * self + alpha * out (out holds the product), self broadcast to
// out's 2-D shape: addmm's epilogue, run on each block of rows as the product finishes it.
void addmm_epilogue(const TensorView& self, const TensorView& out, double beta, double alpha,
                    int64_t r0, int64_t r1) {
  int64_t m = out.sizes[1];
  int64_t srs = 0, scs = 0;
  size_t sr = self.sizes.size();
  if (sr >= 1) scs = self.sizes[sr - 1] == 1 ? 0 : self.strides[sr - 1];
  if (sr == 2) srs = self.sizes[0] == 1 ? 0 : self.strides[0];
  bool beta_zero = beta == 0;
  dispatch(out.dtype, [&](auto tag) {
    using T = decltype(tag);
    const T* ps = static_cast<const T*>(self.data) + self.offset;
    T* po = static_cast<T*>(out.data) + out.offset;
    if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
      // nn.Linear's bias (beta = alpha = 1) on rows of unit stride: o = s + o, the general
      // form's value exactly (1 * x is x, NaNs and signed zeros included), in a loop the
      // compiler vectorises.
      if (beta == 1 && alpha == 1 && out.strides[1] == 1 && (scs == 1 || scs == 0)) {
        for (int64_t i = r0; i < r1; ++i) add_bias_row(po + i * out.strides[0], ps + i * srs, scs, m);
        return;
      }
    }
    for (int64_t i = r0; i < r1; ++i)
      for (int64_t j = 0; j < m; ++j) {
        T& o = po[i * out.strides[0] + j * out.strides[1]];
        const T& s = ps[i * srs + j * scs];
        if constexpr (std::is_same_v<T, bool>) {
          bool al = alpha != 0, be = beta != 0;
          o = beta_zero ? (al && o) : ((be && s) || (al && o));
        } else if constexpr (std::is_integral_v<T>) {
          uint64_t al = static_cast<uint64_t>(static_cast<int64_t>(alpha));
          uint64_t be = static_cast<uint64_t>(static_cast<int64_t>(beta));
          uint64_t p = static_cast<uint64_t>(static_cast<int64_t>(o));
          uint64_t sv = static_cast<uint64_t>(static_cast<int64_t>(s));
          o = static_cast<T>(static_cast<int64_t>(beta_zero ? al * p : be * sv + al * p));
        } else if constexpr (std::is_same_v<T, double>) {
          o = beta_zero ? alpha * o : beta * s + alpha * o;
        } else {
          float al = static_cast<float>(alpha), be = static_cast<float>(beta);
          float p = to_float(o), sv = to_float(s);
          o = from_float<T>(beta_zero ? al * p : be * sv + al * p);
        }
      }
  });
}

// addmm's checks (before the product runs): 2-D result, self broadcasting to it, one dtype.
void check_addmm_self(const TensorView& self, const TensorView& out) {
  if (out.sizes.size() != 2) bad("addmm", "the result must be 2-D");
  if (self.sizes.size() > 2) bad("addmm", "self must have at most 2 dims");
  size_t sr = self.sizes.size();
  if (sr >= 1 && self.sizes[sr - 1] != 1 && self.sizes[sr - 1] != out.sizes[1])
    bad("addmm", "self " + shape_str(self.sizes) + " does not broadcast");
  if (sr == 2 && self.sizes[0] != 1 && self.sizes[0] != out.sizes[0])
    bad("addmm", "self " + shape_str(self.sizes) + " does not broadcast");
  if (self.dtype != out.dtype) bad("addmm", "self and the result must share one dtype");
}

void check_arity(const std::string& name, const std::vector<TensorView>& t, size_t num_inputs,
                 size_t want_inputs) {
  if (num_inputs != want_inputs || t.size() != want_inputs + 1)
    bad(name, "takes " + std::to_string(want_inputs) + " inputs and 1 output, got " +
                  std::to_string(num_inputs) + " inputs and " +
                  std::to_string(t.size() - std::min(t.size(), num_inputs)) + " outputs");
  for (const TensorView& v : t) {
    int64_t numel = 1;
    for (int64_t d : v.sizes) numel *= d;
    if (!v.data && numel > 0) bad(name, "null data pointer");
    if (v.strides.size() != v.sizes.size()) bad(name, "sizes and strides differ in rank");
  }
}

}  // namespace

const std::vector<std::string>& extern_kernel_names() {
  static const std::vector<std::string> names = {"mm",          "bmm",
                                                 "addmm",       "matmul",
                                                 "convolution", "flash_attention",
                                                 "flash_attention_backward", "flash_attention_dropout",
                                                 "flash_attention_dropout_backward", "scatter_add",
                                                 "index_put"};
  return names;
}

void run_extern_kernel(const std::string& name, const std::vector<TensorView>& t, size_t num_inputs,
                       const std::vector<double>& scalars, const ExternContext& ctx) {
  if (!ctx.gemm) throw PluginError(STAX_ERROR_INTERNAL, "cpu_cpp: extern kernel without a GEMM library");
  const TensorView* out = t.size() > num_inputs ? &t[num_inputs] : nullptr;
  // The output's finished rows as flat element ranges, for the epilogue; a strided output
  // reports itself whole at the end.
  const bool flat = out && ctx.done && contiguous(*out);
  int64_t numel = 1;
  if (out)
    for (int64_t d : out->sizes) numel *= d;
  bool by_rows = false;  // whether the rows report the output (else it is reported whole)
  auto report = [&](const TensorView& a, const TensorView& b) -> sdk::gemm::RowsDone {
    if (!flat) return {};
    by_rows = true;
    Mat c = result(*out, a, b);
    const int64_t rows = c.rows, cols = c.cols;
    return [&ctx, rows, cols](int64_t e, int64_t r0, int64_t r1) {
      ctx.done((e * rows + r0) * cols, (e * rows + r1) * cols);
    };
  };
  if (name == "mm" || name == "bmm") {
    check_arity(name, t, num_inputs, 2);
    size_t rank = name == "mm" ? 2 : 3;
    if (t[0].sizes.size() != rank || t[1].sizes.size() != rank)
      bad(name, "operands must be " + std::to_string(rank) + "-D, got " + shape_str(t[0].sizes) +
                    " and " + shape_str(t[1].sizes));
    matmul(name, t[0], t[1], t[2], *ctx.gemm, report(t[0], t[1]));
  } else if (name == "matmul") {
    check_arity(name, t, num_inputs, 2);
    matmul(name, t[0], t[1], t[2], *ctx.gemm, report(t[0], t[1]));
  } else if (name == "addmm") {
    check_arity(name, t, num_inputs, 3);
    if (t[1].sizes.size() != 2 || t[2].sizes.size() != 2)
      bad(name, "mat1 and mat2 must be 2-D, got " + shape_str(t[1].sizes) + " and " +
                    shape_str(t[2].sizes));
    check_addmm_self(t[0], t[3]);
    double beta = scalars.size() > 0 ? scalars[0] : 1.0;
    double alpha = scalars.size() > 1 ? scalars[1] : 1.0;
    const bool plain = beta == 0 && alpha == 1;  // the product is the result
    sdk::gemm::RowsDone then = report(t[1], t[2]);
    matmul(name, t[1], t[2], t[3], *ctx.gemm,
           [&](int64_t e, int64_t r0, int64_t r1) {
             if (!plain) addmm_epilogue(t[0], t[3], beta, alpha, r0, r1);
             if (then) then(e, r0, r1);
           });
  } else if (name == "convolution") {
    run_convolution(t, num_inputs, scalars, *ctx.gemm, ctx.pool);
  } else if (name == "scatter_add") {
    run_scatter_add(t, num_inputs, scalars, ctx.pool);
  } else if (name == "index_put") {
    run_index_put(t, num_inputs, scalars, ctx.pool);
  } else if (name == "flash_attention" || name == "flash_attention_backward" ||
             name == "flash_attention_dropout" || name == "flash_attention_dropout_backward") {
    run_flash_attention(name, t, num_inputs, scalars, ctx.pool);
  } else {
    throw PluginError(STAX_ERROR_UNSUPPORTED, "cpu_cpp has no extern kernel '" + name + "'");
  }
  if (ctx.done && !by_rows && numel > 0) ctx.done(0, numel);
}

}  // namespace stax::cpu
