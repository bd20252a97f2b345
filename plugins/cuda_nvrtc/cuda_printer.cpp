#include "plugins/cuda_nvrtc/cuda_printer.h"

#include <algorithm>
#include <map>
#include <regex>
#include <set>
#include <vector>

#include "plugins/cuda_nvrtc/embedded_text.h"
#include "stax/sdk/cstyle_printer.hpp"
#include "stax/sdk/source_writer.hpp"

namespace stax::cuda {

namespace {

using sdk::DType;
using sdk::ReductionType;

// NVRTC, before scalar_ops.hpp: CUDA's device math under the __builtin_* names scalar_ops.hpp
// calls (NVRTC knows no such builtins), and the 16-bit float types.
std::string nvrtc_head() {
  std::string s = "// CUDA device math under the names of stax/sdk/scalar_ops.hpp\n";
  for (const char* f : {"exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "sqrt", "sin",
                        "cos", "tan", "tanh", "erf", "floor", "ceil", "trunc", "nearbyint", "fabs",
                        "fmod", "copysign", "pow"}) {
    s += "#define __builtin_" + std::string(f) + "f " + f + "f\n";
    s += "#define __builtin_" + std::string(f) + " " + f + "\n";
  }
  // The transcendentals: CUDA's own (scalar_ops.hpp takes SLEEF's on the CPU; CUDA's expf etc.
  // are within 2 ULP (CUDA C Programming Guide, Mathematical Functions), so tests on a GPU compare
  // with a bound, never bitwise; the host emulation below keeps SLEEF's and stays bitwise).
  s += "#define STAX_SCALAR_MATH_F(name) name##f\n#define STAX_SCALAR_MATH_D(name) name\n";
  s += R"(#define __builtin_inff() __int_as_float(0x7f800000)
#define __builtin_inf() __longlong_as_double(0x7ff0000000000000LL)
#define __builtin_huge_valf() __int_as_float(0x7f800000)
#define __builtin_huge_val() __longlong_as_double(0x7ff0000000000000LL)
#define __builtin_nanf(s) __int_as_float(0x7fc00000)
#define __builtin_nan(s) __longlong_as_double(0x7ff8000000000000LL)
#include <cuda_fp16.h>
#include <cuda_bf16.h>
// Prelude: stax/sdk/scalar_ops.hpp
)";
  return s;
}

// Host emulation, before scalar_ops.hpp: the CUDA built-ins on grid_emulator.h's EmuState (same
// layout as stax_emu_state), the 16-bit float types on half_bits.hpp.
std::string emulation_head() {
  return std::string(R"(// Host emulation of the CUDA built-ins (plugins/cuda_nvrtc/grid_emulator.h)
struct stax_emu_dim3 { unsigned x, y, z; };
struct stax_emu_state {
  stax_emu_dim3 thread_idx, block_idx, block_dim, grid_dim;
  void (*sync)(stax_emu_state*);
  void (*trap)(stax_emu_state*);
  void* runtime;
};
static stax_emu_state* stax_emu;
#define threadIdx (stax_emu->thread_idx)
#define blockIdx (stax_emu->block_idx)
#define blockDim (stax_emu->block_dim)
#define gridDim (stax_emu->grid_dim)
#define __syncthreads() stax_emu->sync(stax_emu)
#define __trap() stax_emu->trap(stax_emu)
#define __global__
#define __device__
#define __shared__ static
#define __launch_bounds__(n)
// The blocks of a launch run one after another on one thread: plain read-modify-write.
inline unsigned long long atomicCAS(unsigned long long* p, unsigned long long expected,
                                    unsigned long long desired) {
  unsigned long long old = *p;
  if (old == expected) *p = desired;
  return old;
}
inline void __threadfence_system() {}
// Warp shuffles: each lane publishes its value in its slot, every thread of the block switches
// (the emulator's barrier), each reads its source lane's slot, and switches again before the
// slots are reused. The kernels call shuffles uniformly (every thread of the block the same
// number of times), as the printer's warp form does; a mismatch is reported as divergence.
// The mask is not checked (the printer always passes the full warp).
static unsigned long long stax_emu_lanes[1024];
template <class T>
inline T stax_emu_shfl(T v, unsigned src_lane, int width) {
  unsigned t = threadIdx.x;
  union { T value; unsigned long long bits; } in, out;
  in.bits = 0;
  in.value = v;
  stax_emu_lanes[t] = in.bits;
  __syncthreads();
  unsigned base = t - t % (unsigned)width;
  out.bits = stax_emu_lanes[base + src_lane % (unsigned)width];
  __syncthreads();
  return out.value;
}
template <class T>
inline T __shfl_down_sync(unsigned mask, T v, unsigned delta, int width = 32) {
  (void)mask;
  unsigned lane = threadIdx.x % (unsigned)width;
  return stax_emu_shfl(v, lane + delta < (unsigned)width ? lane + delta : lane, width);
}
template <class T>
inline T __shfl_xor_sync(unsigned mask, T v, int lane_mask, int width = 32) {
  (void)mask;
  unsigned lane = threadIdx.x % (unsigned)width;
  unsigned src = lane ^ (unsigned)lane_mask;
  return stax_emu_shfl(v, src < (unsigned)width ? src : lane, width);
}
// Prelude: half_bits.hpp
)") + embedded::kHalfBits + R"(
struct __half { unsigned short bits; };
struct __nv_bfloat16 { unsigned short bits; };
inline float __half2float(__half x) { return stax_f16::half_to_float(x.bits); }
inline __half __float2half_rn(float x) { return __half{stax_f16::float_to_half(x)}; }
inline float __bfloat162float(__nv_bfloat16 x) { return stax_f16::bf16_to_float(x.bits); }
inline __nv_bfloat16 __float2bfloat16_rn(float x) {
  return __nv_bfloat16{stax_f16::float_to_bf16(x)};
}
// Prelude: stax/sdk/scalar_ops.hpp
)";
}

// After scalar_ops.hpp (both targets): conversions of the 16-bit float types (through float, rounding to
// nearest even, like the reference runtime), the bounds check, the arg-reduction
// combine rule.
constexpr const char kPreludeTail[] = R"(
namespace stax_scalar {
inline float stax_to_float(__half x) { return __half2float(x); }
inline float stax_to_float(__nv_bfloat16 x) { return __bfloat162float(x); }
template <class H> inline H stax_from_float(float x);
template <> inline __half stax_from_float<__half>(float x) { return __float2half_rn(x); }
template <> inline __nv_bfloat16 stax_from_float<__nv_bfloat16>(float x) {
  return __float2bfloat16_rn(x);
}
STAX_SCALAR_F16_CONVERSIONS(__half)
STAX_SCALAR_F16_CONVERSIONS(__nv_bfloat16)
}  // namespace stax_scalar


// Indirect indexing out of bounds: the launch fails (CUDA_ERROR_ILLEGAL_INSTRUCTION).
#define STAX_CHECK(cond, message) \
  do {                            \
    if (!(cond)) __trap();        \
  } while (0)
// The same for an indirect index, reporting it first: the first thread to fail (atomicCAS on
// stax_fault[0]) leaves the index as loaded and the size in stax_fault[1], [2], which the host
// reads after the launch (host-visible memory: it survives the trap), then the launch fails.
__device__ inline void stax_record_index_fault(unsigned long long* f, long long index,
                                               long long size) {
  if (atomicCAS(f, 0ULL, 1ULL) == 0ULL) {
    f[1] = (unsigned long long)index;
    f[2] = (unsigned long long)size;
    __threadfence_system();
  }
}
#define STAX_CHECK_INDEX(cond, index, size)                  \
  do {                                                       \
    if (!(cond)) {                                           \
      stax_record_index_fault(stax_fault, (index), (size));  \
      __trap();                                              \
    }                                                        \
  } while (0)

// The warp form's shuffle within a row's group of 16 lanes (kRowLanes): the value of lane + h,
// or the lane's own value past the group. Through 64 bits, so every accumulator type (bool, the
// 8-bit types, float, double, 64-bit integers) uses one overload of __shfl_down_sync.
template <class T>
__device__ inline T stax_shfl_down16(T v, unsigned h) {
  union { T value; unsigned long long bits; } in, out;
  in.bits = 0;
  in.value = v;
  out.bits = __shfl_down_sync(0xffffffffu, in.bits, h, 16);
  return out.value;
}

// argmax / argmin: whether (vb, ib) replaces (va, ia). NaN counts as the extreme; among equal
// values (or NaNs) the smaller index wins, so the combine is associative and commutative and the
// result is the first occurrence, whatever the order of the partial results.
template <class T>
inline bool stax_arg_prefer(T vb, long long ib, T va, long long ia, bool is_max) {
  bool na = va != va, nb = vb != vb;
  if (na || nb) return nb && (!na || ib < ia);
  if (vb == va) return ib < ia;
  return is_max ? vb > va : vb < va;
}
)";

sdk::CStyleTables cuda_tables() {
  sdk::CStyleTables t;
  t.storage_types[static_cast<int>(DType::Float16)] = "__half";
  t.storage_types[static_cast<int>(DType::BFloat16)] = "__nv_bfloat16";
  t.kernel_prefix = "extern \"C\" __global__ void";
  return t;
}

// An accumulator of a reduction-loop body, for the block combine.
struct Accumulator {
  std::string name;  // acc3 (arg reductions: value acc3, index acc3_index)
  std::string type;  // its compute type
  ReductionType reduction;
};

class CudaPrinter : public sdk::CStylePrinter {
 public:
  explicit CudaPrinter(const sdk::Kernel& k)
      : sdk::CStylePrinter(k, cuda_tables()), num_buffers_(k.num_buffers()) {}

  std::string reduction(ReductionType type, DType dtype, std::string value) override {
    bool arg = type == ReductionType::ArgMax || type == ReductionType::ArgMin;
    DType acc_type = arg ? dtype_of(value) : dtype;
    std::string result = sdk::CStylePrinter::reduction(type, dtype, value);
    std::string name = arg ? result.substr(0, result.size() - 6) : result;  // drop "_index"
    accumulators_.push_back({name, compute_type(acc_type), type});
    return result;
  }
  // The accumulators printed since the last call.
  std::vector<Accumulator> take_accumulators() { return std::move(accumulators_); }
  // The buffers, then the fault record of STAX_CHECK_INDEX (kFaultParam).
  std::string signature() const override {
    std::string s = sdk::CStylePrinter::signature();
    size_t close = s.rfind(')');
    return s.substr(0, close) + (num_buffers_ ? ", " : "") + "unsigned long long* " +
           kFaultParam + s.substr(close);
  }
  // STAX_CHECK_INDEX(0 <= tmp1 && tmp1 < 5, (long long)(tmp0), 5LL): the host's message names
  // the loaded index and the size.
  std::string check_index(const std::string& cond, const std::string& index, const std::string&,
                          int64_t size) const override {
    return "STAX_CHECK_INDEX(" + cond + ", (long long)(" + index + "), " +
           std::to_string(size) + "LL);";
  }
  // `op(a, b)` spelled as the printer spells ops.def ops.
  std::string combine(int32_t opcode, const std::string& a, const std::string& b) const {
    return op_call(opcode, {a, b});
  }

 private:
  size_t num_buffers_;
  std::vector<Accumulator> accumulators_;
};

using sdk::SourceWriter;

// `<T> <var(k)> = (<T>)<term k>;` for the row-major decomposition of `linear` over `extents`.
template <class VarName>
void decompose(SourceWriter& w, const std::string& index_type, const std::string& linear,
               sdk::Span<int64_t> extents, VarName var) {
  const std::vector<std::string> terms = sdk::decompose_index(linear, extents, sdk::c_index());
  for (size_t k = 0; k < terms.size(); ++k)
    w.line(index_type + " " + var(static_cast<int32_t>(k)) + " = (" + index_type + ")" +
           terms[k] + ";");
}

int32_t combine_opcode(ReductionType t) {
  switch (t) {
    case ReductionType::Sum: return STAX_OP_add;
    case ReductionType::Prod: return STAX_OP_mul;
    case ReductionType::Max: return STAX_OP_maximum;
    case ReductionType::Min: return STAX_OP_minimum;
    case ReductionType::Any: return STAX_OP_logical_or;
    case ReductionType::All: return STAX_OP_logical_and;
    default:
      throw sdk::PluginError(STAX_ERROR_UNSUPPORTED, std::string("cuda_nvrtc: reduction type ") +
                                                         sdk::reduction_type_name(t));
  }
}

// The fixed-tree block combine of one accumulator: afterwards thread 0 holds the row's result.
// Shared memory: stax_smem, 2 * blockDim 8-byte words (values, then arg indices).
void emit_combine(SourceWriter& w, const CudaPrinter& p, const Accumulator& a) {
  bool arg = a.reduction == ReductionType::ArgMax || a.reduction == ReductionType::ArgMin;
  std::string v = a.name + "_smem";
  w.open("{");
  w.line(a.type + "* " + v + " = reinterpret_cast<" + a.type + "*>(stax_smem);");
  if (arg) w.line("long long* " + v + "_index = reinterpret_cast<long long*>(stax_smem) + blockDim.x;");
  w.line(v + "[threadIdx.x] = " + a.name + ";");
  if (arg) w.line(v + "_index[threadIdx.x] = " + a.name + "_index;");
  w.line("__syncthreads();");
  w.open("for (unsigned stax_s = blockDim.x / 2; stax_s > 0; stax_s /= 2) {");
  w.open("if (threadIdx.x < stax_s) {");
  std::string mine = v + "[threadIdx.x]", other = v + "[threadIdx.x + stax_s]";
  if (arg) {
    std::string mine_i = v + "_index[threadIdx.x]", other_i = v + "_index[threadIdx.x + stax_s]";
    std::string is_max = a.reduction == ReductionType::ArgMax ? "true" : "false";
    w.open("if (stax_arg_prefer(" + other + ", " + other_i + ", " + mine + ", " + mine_i + ", " +
           is_max + ")) {");
    w.line(mine + " = " + other + ";");
    w.line(mine_i + " = " + other_i + ";");
    w.close();
  } else {
    w.line(mine + " = " + p.combine(combine_opcode(a.reduction), mine, other) + ";");
  }
  w.close();
  w.line("__syncthreads();");
  w.close();
  w.line(a.name + " = " + v + "[0];");
  if (arg) w.line(a.name + "_index = " + v + "_index[0];");
  w.line("__syncthreads();");
  w.close();
}

// The warp form's combine of one accumulator over its row's 16 lanes (the segmented order's
// tree); afterwards lane 0 holds the row's result.
void emit_warp_combine(SourceWriter& w, const CudaPrinter& p, const Accumulator& a) {
  bool arg = a.reduction == ReductionType::ArgMax || a.reduction == ReductionType::ArgMin;
  for (unsigned h = kRowLanes / 2; h >= 1; h /= 2) {
    std::string hs = std::to_string(h) + "u";
    w.open("{");
    w.line("auto stax_o = stax_shfl_down16(" + a.name + ", " + hs + ");");
    if (arg) {
      std::string is_max = a.reduction == ReductionType::ArgMax ? "true" : "false";
      w.line("auto stax_oi = stax_shfl_down16(" + a.name + "_index, " + hs + ");");
      w.open("if (stax_arg_prefer(stax_o, stax_oi, " + a.name + ", " + a.name + "_index, " +
             is_max + ")) {");
      w.line(a.name + " = stax_o;");
      w.line(a.name + "_index = stax_oi;");
      w.close();
    } else {
      w.line(a.name + " = " + p.combine(combine_opcode(a.reduction), a.name, "stax_o") + ";");
    }
    w.close();
  }
}

// The persistent variant of the warp form: loads of a kernel input that several reduction-loop
// bodies repeat (softmax and layer_norm read their row once per body) are read from global
// memory once, by the first body, into a per-lane register array (one entry per element the
// lane owns, at most kWarpRowMax / kRowLanes = 64); later bodies read the array. The loops run
// over a compile-time count of per-lane elements (unrolled, so the arrays stay in registers).
// Only the printer's plain input load `<type> tmpN = in_ptrK[index];` is cached; the arithmetic and
// its order are unchanged, so results are the same bits.
struct PersistentLoads {
  // Per body, per line: "" (keep), or the replacement / addition.
  std::vector<std::vector<std::string>> after;    // a line to add after the load (the store)
  std::vector<std::vector<std::string>> replace;  // the line that replaces the load
  std::vector<std::string> declarations;          // `float stax_cache0[2];` ...
  bool any() const { return !declarations.empty(); }
};

PersistentLoads plan_persistent_loads(const sdk::Kernel& k, const std::string& signature,
                                      const std::vector<sdk::PrintedBody>& bodies,
                                      int64_t per_lane) {
  // `<type> tmpN = in_ptrK[index];` (the declared type: `auto` or the compute type).
  static const std::regex load(R"(^([A-Za-z_][A-Za-z_0-9:]*) (tmp[0-9]+) = (in_ptr[0-9]+)\[([^\[\]]+)\];$)");
  PersistentLoads out;
  out.after.resize(bodies.size());
  out.replace.resize(bodies.size());
  std::map<std::string, std::vector<size_t>> bodies_of;  // "in_ptr0[32*i0 + r0_0]" -> bodies
  for (size_t b = 0; b < bodies.size(); ++b) {
    out.after[b].assign(bodies[b].lines.size(), "");
    out.replace[b].assign(bodies[b].lines.size(), "");
    if (!k.body(b).is_reduction_loop()) continue;
    std::set<std::string> seen;
    for (const std::string& l : bodies[b].lines) {
      std::smatch m;
      if (std::regex_match(l, m, load) && seen.insert(m[3].str() + "[" + m[4].str() + "]").second)
        bodies_of[m[3].str() + "[" + m[4].str() + "]"].push_back(b);
    }
  }
  std::map<std::string, std::string> cache_of;  // key -> stax_cacheN
  for (const auto& [key, bs] : bodies_of) {
    if (bs.size() < 2) continue;
    std::string ptr = key.substr(0, key.find('['));
    std::smatch t;
    std::regex param("const ([A-Za-z_0-9:]+)\\* " + ptr + "[,)]");
    if (!std::regex_search(signature, t, param)) continue;
    std::string name = "stax_cache" + std::to_string(cache_of.size());
    cache_of[key] = name;
    out.declarations.push_back(t[1].str() + " " + name + "[" + std::to_string(per_lane) + "];");
  }
  for (size_t b = 0; b < bodies.size(); ++b) {
    if (!k.body(b).is_reduction_loop()) continue;
    for (size_t i = 0; i < bodies[b].lines.size(); ++i) {
      std::smatch m;
      const std::string& l = bodies[b].lines[i];
      if (!std::regex_match(l, m, load)) continue;
      std::string key = m[3].str() + "[" + m[4].str() + "]";
      auto c = cache_of.find(key);
      if (c == cache_of.end()) continue;
      bool first = bodies_of[key].front() == b;
      if (first)
        out.after[b][i] = c->second + "[stax_k] = " + m[2].str() + ";";
      else
        out.replace[b][i] = m[1].str() + " " + m[2].str() + " = " + c->second + "[stax_k];";
    }
  }
  return out;
}

// The warp form (cuda_printer.h): the kernel's body inside its signature's braces.
void emit_warp_rows(SourceWriter& w, const CudaPrinter& p, const sdk::Kernel& k,
                    const LaunchPlan& plan, const std::vector<sdk::PrintedBody>& bodies,
                    const std::vector<std::vector<Accumulator>>& accs) {
  const std::string ix = p.index_type();
  auto iter = [&](int32_t d) { return p.iter_var(d); };
  auto red = [&](int32_t d) { return p.reduce_var(d); };
  const std::string n = std::to_string(plan.points) + "LL";
  const std::string lanes = std::to_string(kRowLanes);
  w.line("const unsigned stax_lane = threadIdx.x % " + lanes + "u;");
  w.open("for (long long stax_base = (long long)blockIdx.x * (blockDim.x / " + lanes +
         "u); stax_base < " + n + "; stax_base += (long long)gridDim.x * (blockDim.x / " + lanes +
         "u)) {");
  w.line("long long stax_row = stax_base + threadIdx.x / " + lanes + "u;");
  w.line("const bool stax_active = stax_row < " + n + ";");
  w.line("if (!stax_active) stax_row = stax_base;  // joins the shuffles and barriers only");
  decompose(w, ix, "stax_row", k.ranges(), iter);
  const std::string rn = std::to_string(plan.reduction_numel) + "LL";
  const int64_t per_lane = (plan.reduction_numel + kRowLanes - 1) / kRowLanes;
  PersistentLoads persistent = plan_persistent_loads(k, p.signature(), bodies, per_lane);
  if (persistent.any()) w.line("// persistent: the row's repeated input loads stay in registers");
  for (const std::string& d : persistent.declarations) w.line(d);
  for (size_t b = 0; b < k.num_bodies(); ++b) {
    sdk::LoopBody body = k.body(b);
    if (!body.name().empty()) w.line("// " + body.name());
    const sdk::PrintedBody& pb = bodies[b];
    if (!body.is_reduction_loop()) {
      w.open("if (stax_active && stax_lane == 0) {");
      for (const std::string& l : pb.lines) w.line(l);
      w.close();
    } else {
      w.open("{");
      for (const std::string& l : pb.prologue) w.line(l);
      w.open("if (stax_active) {");
      if (persistent.any()) {
        w.line("#pragma unroll");
        w.open("for (int stax_k = 0; stax_k < " + std::to_string(per_lane) + "; ++stax_k) {");
        w.line("long long stax_r = stax_lane + " + lanes + "LL * stax_k;");
        w.open("if (stax_r < " + rn + ") {");
      } else {
        w.open("for (long long stax_r = stax_lane; stax_r < " + rn + "; stax_r += " + lanes +
               ") {");
      }
      decompose(w, ix, "stax_r", k.reduction_ranges(), red);
      for (size_t i = 0; i < pb.lines.size(); ++i) {
        const std::string& replaced = persistent.replace[b][i];
        w.line(replaced.empty() ? pb.lines[i] : replaced);
        if (!persistent.after[b][i].empty()) w.line(persistent.after[b][i]);
      }
      if (persistent.any()) w.close();
      w.close();
      w.close();
      for (const Accumulator& a : accs[b]) emit_warp_combine(w, p, a);
      if (!pb.epilogue.empty()) {
        w.open("if (stax_active && stax_lane == 0) {");
        for (const std::string& l : pb.epilogue) w.line(l);
        w.close();
      }
      w.close();
    }
    w.line("__syncthreads();");
  }
  w.close();
}

std::string launch_bounds(const LaunchPlan& plan) {
  return "__launch_bounds__(" + std::to_string(plan.block) + ")";
}

}  // namespace

unsigned block_threads(int64_t reduction_numel) {
  unsigned b = 32;
  while (b < 256 && static_cast<int64_t>(b) < reduction_numel) b *= 2;
  return b;
}

LaunchPlan plan_launch(const sdk::Kernel& k) {
  LaunchPlan plan;
  for (size_t b = 0; b < k.num_bodies(); ++b)
    plan.row_per_block = plan.row_per_block || k.body(b).is_reduction_loop();
  plan.points = k.numel();
  plan.reduction_numel = k.reduction_numel();
  if (plan.row_per_block && plan.reduction_numel <= kWarpRowMax) {
    plan.warp_rows = true;
    plan.block = 256;
    int64_t rows_per_block = plan.block / kRowLanes;
    int64_t blocks = (plan.points + rows_per_block - 1) / rows_per_block;
    plan.grid = static_cast<unsigned>(std::min<int64_t>(std::max<int64_t>(blocks, 1), kMaxGrid));
  } else if (plan.row_per_block) {
    plan.block = block_threads(plan.reduction_numel);
    plan.grid = static_cast<unsigned>(std::min<int64_t>(std::max<int64_t>(plan.points, 1), kMaxGrid));
  } else {
    plan.block = 256;
    int64_t blocks = (plan.points + plan.block - 1) / plan.block;
    plan.grid = static_cast<unsigned>(std::min<int64_t>(std::max<int64_t>(blocks, 1), kMaxGrid));
  }
  return plan;
}

const std::string& kernel_prelude(Target target) {
  static const std::string nvrtc = nvrtc_head() + embedded::kScalarOps + kPreludeTail;
  static const std::string host = emulation_head() + embedded::kScalarOps + kPreludeTail;
  return target == Target::Nvrtc ? nvrtc : host;
}

namespace {

// The pointwise form: one iteration point per thread, grid-stride over the flattened space.
void emit_pointwise_grid(SourceWriter& w, const CudaPrinter& p, const sdk::Kernel& k,
                         const LaunchPlan& plan, const std::vector<sdk::PrintedBody>& bodies) {
  const std::string n = std::to_string(plan.points) + "LL";
  w.open("for (long long stax_linear = (long long)blockIdx.x * blockDim.x + threadIdx.x; "
         "stax_linear < " + n + "; stax_linear += (long long)blockDim.x * gridDim.x) {");
  decompose(w, p.index_type(), "stax_linear", k.ranges(),
            [&](int32_t d) { return p.iter_var(d); });
  for (size_t b = 0; b < k.num_bodies(); ++b) {
    if (!k.body(b).name().empty()) w.line("// " + k.body(b).name());
    for (const std::string& l : bodies[b].lines) w.line(l);
  }
  w.close();
}

// The block form: one row per block, grid-stride over rows; a reduction body strided over the
// block's threads and combined in the fixed tree; __syncthreads() between bodies.
void emit_block_rows(SourceWriter& w, const CudaPrinter& p, const sdk::Kernel& k,
                     const LaunchPlan& plan, const std::vector<sdk::PrintedBody>& bodies,
                     const std::vector<std::vector<Accumulator>>& accs) {
  const std::string ix = p.index_type();
  const std::string n = std::to_string(plan.points) + "LL";
  w.line("__shared__ unsigned long long stax_smem[" + std::to_string(2 * plan.block) + "];");
  w.open("for (long long stax_row = blockIdx.x; stax_row < " + n + "; stax_row += gridDim.x) {");
  decompose(w, ix, "stax_row", k.ranges(), [&](int32_t d) { return p.iter_var(d); });
  const std::string rn = std::to_string(plan.reduction_numel) + "LL";
  for (size_t b = 0; b < k.num_bodies(); ++b) {
    sdk::LoopBody body = k.body(b);
    if (!body.name().empty()) w.line("// " + body.name());
    const sdk::PrintedBody& pb = bodies[b];
    if (!body.is_reduction_loop()) {
      w.open("if (threadIdx.x == 0) {");
      for (const std::string& l : pb.lines) w.line(l);
      w.close();
    } else {
      w.open("{");
      for (const std::string& l : pb.prologue) w.line(l);
      w.open("for (long long stax_r = threadIdx.x; stax_r < " + rn + "; stax_r += blockDim.x) {");
      decompose(w, ix, "stax_r", k.reduction_ranges(), [&](int32_t d) { return p.reduce_var(d); });
      for (const std::string& l : pb.lines) w.line(l);
      w.close();
      for (const Accumulator& a : accs[b]) emit_combine(w, p, a);
      if (!pb.epilogue.empty()) {
        w.open("if (threadIdx.x == 0) {");
        for (const std::string& l : pb.epilogue) w.line(l);
        w.close();
      }
      w.close();
    }
    w.line("__syncthreads();");
  }
  w.close();
}

}  // namespace

std::string print_kernel_function(const sdk::Kernel& k, const LaunchPlan& plan) {
  CudaPrinter p(k);
  std::vector<sdk::PrintedBody> bodies;
  std::vector<std::vector<Accumulator>> accs;
  for (size_t b = 0; b < k.num_bodies(); ++b) {
    bodies.push_back(p.print(k.body(b)));
    accs.push_back(p.take_accumulators());
  }
  SourceWriter w;
  std::string sig = p.signature();
  sig.insert(sig.find(k.name()), launch_bounds(plan) + " ");
  w.open(sig + " {");
  if (!plan.row_per_block)
    emit_pointwise_grid(w, p, k, plan, bodies);
  else if (plan.warp_rows)
    emit_warp_rows(w, p, k, plan, bodies, accs);
  else
    emit_block_rows(w, p, k, plan, bodies, accs);
  w.close();
  return w.take();
}

std::string print_kernel_source(const sdk::Kernel& kernel, const LaunchPlan& plan,
                                Target target) {
  return kernel_prelude(target) + kKernelMarker + "\n" + print_kernel_function(kernel, plan);
}

}  // namespace stax::cuda
