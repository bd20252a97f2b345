#include "plugins/cuda_triton/triton_attention.h"

#include <algorithm>
#include <cstring>

#include "plugins/cuda_common/gpu_backend_support.h"
#include "plugins/cuda_triton/embedded_worker.h"

namespace stax::triton {

namespace {

using sdk::DType;
using sdk::PluginError;
using sdk::TensorView;

constexpr int kBatchDims = 4;  // flash_attention.py's batch split (_batch_offset)
constexpr int64_t kBlockRows = 32, kBlockKeys = 32;

[[noreturn]] void bad(const std::string& kernel, const std::string& what) {
  throw PluginError(STAX_ERROR_INVALID_ARGUMENT,
                    "cuda_triton extern kernel '" + kernel + "': " + what);
}

int64_t block_for(int64_t d) {
  int64_t b = 16;  // tl.dot's smallest dimension
  while (b < d) b *= 2;
  return b;
}

// The tensor's accessed range and types.
AttentionTensor span(const std::string& name, const TensorView& t, bool written) {
  AttentionTensor a;
  const int64_t elt = cuda::dtype_bytes(t.dtype);
  a.base = static_cast<char*>(t.data) + t.offset * elt;
  int64_t last = 0;
  bool empty = false;
  for (size_t d = 0; d < t.sizes.size(); ++d) {
    if (t.strides[d] < 0) bad(name, "negative strides are not supported");
    if (t.sizes[d] == 0) empty = true;
    else last += (t.sizes[d] - 1) * t.strides[d];
  }
  a.bytes = empty ? 0 : static_cast<size_t>((last + 1) * elt);
  a.dtype = t.dtype == DType::Float32   ? "float32"
            : t.dtype == DType::Float64 ? "float64"
            : t.dtype == DType::Int64   ? "int64"
                                        : "uint8";
  a.written = written;
  return a;
}

const char* signature_of(DType d) {
  return d == DType::Float32 ? "*fp32" : d == DType::Float64 ? "*fp64" : d == DType::Int64 ? "*i64" : "*u8";
}

// The shapes of an extern call, checked.
struct Shapes {
  bool fwd = true;
  size_t first = 0;  // index of q
  const TensorView* mask = nullptr;
  const TensorView* seed = nullptr;  // the dropout externs: the seed (the last input)
  size_t saved = 0;                  // the backward: index of the saved packed output
  std::vector<int64_t> batch;
  int64_t l = 0, e = 0, s = 0, ev = 0, nbatch = 1;
  int mask_kind = 0;  // 0 none, 1 bool, 2 additive
};

Shapes check_operands(const std::string& name, const std::vector<TensorView>& t,
                      size_t num_inputs, const std::vector<double>& scalars) {
  Shapes sh;
  sh.fwd = name == "flash_attention" || name == "flash_attention_dropout";
  const bool dropout = name == "flash_attention_dropout" || name == "flash_attention_dropout_backward";
  if (!sh.fwd && !dropout && name != "flash_attention_backward") bad(name, "unknown extern");
  const size_t lo = (sh.fwd ? 3 : 5) + (dropout ? 1 : 0);
  if (num_inputs < lo || num_inputs > lo + 1 || t.size() != num_inputs + 1)
    bad(name, "takes " + std::to_string(lo) + " or " + std::to_string(lo + 1) +
                  " inputs and 1 output, got " + std::to_string(num_inputs) + " inputs");
  for (const TensorView& v : t)
    if (v.strides.size() != v.sizes.size()) bad(name, "sizes and strides differ in rank");
  sh.first = sh.fwd ? 0 : 1;
  const TensorView &q = t[sh.first], &k = t[sh.first + 1], &v = t[sh.first + 2];
  sh.mask = num_inputs == lo + 1 ? &t[sh.first + 3] : nullptr;
  const size_t r = q.sizes.size();
  if (r < 2 || k.sizes.size() != r || v.sizes.size() != r || (sh.mask && sh.mask->sizes.size() != r))
    bad(name, "query, key, value (and mask) must have one rank >= 2");
  if (r - 2 > kBatchDims)
    bad(name, "at most " + std::to_string(kBatchDims) + " batch dims, got " + std::to_string(r - 2));
  if (q.dtype != DType::Float32 && q.dtype != DType::Float64) bad(name, "takes float32 or float64 tensors");
  if (k.dtype != q.dtype || v.dtype != q.dtype) bad(name, "query, key and value must share one dtype");
  sh.batch.assign(q.sizes.begin(), q.sizes.end() - 2);
  for (const TensorView* x : {&k, &v, sh.mask})
    if (x && std::vector<int64_t>(x->sizes.begin(), x->sizes.end() - 2) != sh.batch)
      bad(name, "operands must share the batch dims");
  sh.l = q.sizes[r - 2], sh.e = q.sizes[r - 1], sh.s = k.sizes[r - 2], sh.ev = v.sizes[r - 1];
  if (k.sizes[r - 1] != sh.e || v.sizes[r - 2] != sh.s) bad(name, "query, key and value disagree");
  if (sh.mask) {
    if (sh.mask->sizes[r - 2] != sh.l || sh.mask->sizes[r - 1] != sh.s) bad(name, "mask shape");
    if (sh.mask->dtype == DType::Bool) sh.mask_kind = 1;
    else if (sh.mask->dtype == q.dtype) sh.mask_kind = 2;
    else bad(name, "the mask must be bool or have the query's dtype");
  }
  if (dropout) {
    sh.seed = &t[num_inputs - 1];
    if (sh.seed->dtype != DType::Int64 || !sh.seed->sizes.empty() || !sh.seed->data)
      bad(name, "the dropout seed must be a 0-d int64 tensor");
    if (scalars.size() != 5)
      bad(name, "expects the scalars is_causal, scale, threshold, keep_above, drop_scale");
  } else if (scalars.size() != 2) {
    bad(name, "expects the scalars is_causal and scale");
  }
  sh.saved = num_inputs - 1 - (dropout ? 1 : 0);
  for (int64_t d : sh.batch) sh.nbatch *= d;
  const int64_t rows = sh.nbatch * sh.l;
  const int64_t want = sh.fwd ? rows * sh.ev + rows : rows * sh.e + sh.nbatch * sh.s * (sh.e + sh.ev);
  const TensorView& out = t.back();
  if (out.sizes.size() != 1 || out.sizes[0] != want || (want > 1 && out.strides[0] != 1))
    bad(name, "the output must be a contiguous 1-D tensor of " + std::to_string(want) + " elements");
  return sh;
}

}  // namespace

const std::vector<std::string>& attention_externs() {
  static const std::vector<std::string> names{"flash_attention", "flash_attention_backward",
                                              "flash_attention_dropout",
                                              "flash_attention_dropout_backward"};
  return names;
}

const std::string& attention_module_text() {
  static const std::string text = embedded::kFlashAttentionModule;
  return text;
}

std::string AttentionLaunch::constexpr_text() const {
  std::string s;
  for (const auto& [k, v] : constexprs) s += (s.empty() ? "" : ",") + k + ":" + std::to_string(v);
  return s;
}

std::string AttentionLaunch::cache_key() const {
  std::string s = kernel;
  for (const std::string& t : signature) s += "," + t;
  return s + ";" + constexpr_text();
}

AttentionPlan plan_attention(const std::string& name, const std::vector<TensorView>& t,
                             size_t num_inputs, const std::vector<double>& scalars) {
  const Shapes sh = check_operands(name, t, num_inputs, scalars);
  const bool fwd = sh.fwd;
  const size_t first = sh.first;
  const TensorView &q = t[first], &k = t[first + 1], &v = t[first + 2];
  const TensorView* mask = sh.mask;
  const size_t r = q.sizes.size();
  const std::vector<int64_t>& batch = sh.batch;
  const int64_t l = sh.l, e = sh.e, s = sh.s, ev = sh.ev, nbatch = sh.nbatch;
  const int mask_kind = sh.mask_kind;
  AttentionPlan plan;
  for (size_t i = 0; i + 1 < t.size(); ++i) plan.tensors.push_back(span(name, t[i], false));
  plan.tensors.push_back(span(name, t.back(), true));

  AttentionLaunch base;
  auto tensor_arg = [&](size_t i, DType d) {
    base.args.push_back({true, i, 0});
    base.signature.push_back(signature_of(d));
  };
  auto int_arg = [&](int64_t x) {
    base.args.push_back({false, 0, x});
    base.signature.push_back("i64");
  };
  tensor_arg(first, q.dtype);
  tensor_arg(first + 1, q.dtype);
  tensor_arg(first + 2, q.dtype);
  if (mask) tensor_arg(first + 3, mask->dtype);
  else tensor_arg(first, q.dtype);  // never read (MASK = 0)
  if (!fwd) {
    tensor_arg(sh.saved, q.dtype);  // saved: out, lse
    tensor_arg(0, q.dtype);               // dout, dlse
  }
  tensor_arg(t.size() - 1, q.dtype);
  double scale = scalars[1];
  int64_t scale_bits;
  std::memcpy(&scale_bits, &scale, sizeof scale);
  for (int64_t x : {l, s, e, ev, scale_bits}) int_arg(x);
  std::vector<int64_t> nb(kBatchDims, 1);
  std::copy(batch.begin(), batch.end(), nb.end() - static_cast<long>(batch.size()));
  for (int d = 1; d < kBatchDims; ++d) int_arg(nb[static_cast<size_t>(d)]);
  for (const TensorView* x : {&q, &k, &v, mask ? mask : &q}) {
    std::vector<int64_t> bs(kBatchDims, 0);
    std::copy(x->strides.begin(), x->strides.end() - 2, bs.end() - static_cast<long>(r - 2));
    for (int64_t st : bs) int_arg(st);
    int_arg(x->strides[r - 2]);
    int_arg(x->strides[r - 1]);
  }
  int_arg(nbatch);
  // Dropout: the seed tensor, the threshold's and the drop scale's float64 bits (without dropout
  // q stands in for the seed and the bits are 0: DROP = 0 reads none of them).
  if (sh.seed) tensor_arg(num_inputs - 1, DType::Int64);
  else tensor_arg(first, q.dtype);
  for (size_t x : {size_t{2}, size_t{4}}) {
    double d = sh.seed ? scalars[x] : 0.0;
    int64_t bits;
    std::memcpy(&bits, &d, sizeof d);
    int_arg(bits);
  }
  const int64_t drop = !sh.seed ? 0 : scalars[3] != 0 ? 1 : 2;
  base.constexprs = {{"CAUSAL", scalars[0] != 0 ? 1 : 0}, {"MASK", mask_kind}, {"DROP", drop},
                     {"BLOCK_M", kBlockRows},           {"BLOCK_N", kBlockKeys},
                     {"BLOCK_E", block_for(e)},          {"BLOCK_EV", block_for(ev)}};
  const int64_t qgrid = nbatch * ((l + kBlockRows - 1) / kBlockRows);
  if (fwd) {
    base.kernel = "stax_attn_fwd";
    base.grid = qgrid;
    plan.launches.push_back(base);
  } else {
    AttentionLaunch kv = base;
    kv.kernel = "stax_attn_bwd_kv";
    kv.grid = nbatch * ((s + kBlockKeys - 1) / kBlockKeys);
    plan.launches.push_back(kv);
    base.kernel = "stax_attn_bwd_q";
    base.grid = qgrid;
    plan.launches.push_back(base);
  }
  return plan;
}

void load_attention_kernel(Worker& w, const std::string& key, const std::string& kernel) {
  Request r{"LOAD", {}, attention_module_text()};
  r.add("key", key);
  r.add("name", kernel);
  w.call(r, "extern kernel '" + kernel + "'");
}

AttentionCubin compile_attention_kernel(Worker& w, const std::string& key,
                                        const AttentionLaunch& launch, int cc) {
  Request r{"COMPILE", {}, ""};
  r.add("key", key);
  r.add("arch", std::to_string(cc));
  r.add("num_warps", std::to_string(launch.num_warps));
  std::string sig;  // the worker reads one entry per parameter, constexprs included (ignored)
  for (const std::string& s : launch.signature) sig += (sig.empty() ? "" : ",") + s;
  for (size_t i = 0; i < launch.constexprs.size(); ++i) sig += ",constexpr";
  r.add("signature", sig);
  r.add("constexprs", launch.constexpr_text());
  r.add("aligned", "");
  r.add("debug", "0");
  Reply rep = w.call(r, "extern kernel '" + launch.kernel + "'");
  AttentionCubin c;
  c.cubin.assign(rep.body.begin(), rep.body.end());
  c.function = rep.field("name");
  c.num_warps = static_cast<unsigned>(std::stoul(rep.field("num_warps")));
  c.shared = static_cast<unsigned>(std::stoul(rep.field("shared")));
  c.num_params = std::stoul(rep.field("num_params"));
  if (c.cubin.empty() || c.num_params < launch.args.size())
    throw PluginError(STAX_ERROR_COMPILE, "cuda_triton extern kernel '" + launch.kernel +
                                              "': Triton's kernel has " +
                                              std::to_string(c.num_params) + " parameters for " +
                                              std::to_string(launch.args.size()) + " arguments");
  if (rep.field("global_scratch_size") != "0" || rep.field("profile_scratch_size") != "0")
    throw PluginError(STAX_ERROR_UNSUPPORTED, "cuda_triton extern kernel '" + launch.kernel +
                                                  "' needs Triton scratch memory (not supported)");
  return c;
}

}  // namespace stax::triton
