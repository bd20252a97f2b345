#include "plugins/cpu_cpp/streaming_store.h"

#include "plugins/cpu_cpp/body_queries.h"

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

#include <cctype>
#include <fstream>

namespace stax::cpu {

namespace {

// Whether store `op` of `body` can stream: the body runs its loop in blocks of 16 (a pointwise
// kernel's innermost iteration loop; a reduction-loop body that accumulates nothing: its innermost
// reduction loop) and the store's index is affine with stride 1 along that loop.
bool store_streams(const sdk::Kernel& k, const sdk::LoopBody& body, const sdk::OpNode& op,
                   bool reduction_kernel) {
  if (has_indirect(body)) return false;
  sdk::Span<int64_t> ranges = k.ranges(), rranges = k.reduction_ranges();
  std::vector<int64_t> iv(ranges.size() + 1, 0), rv(rranges.size() + 1, 0);
  int64_t* var = nullptr;
  int64_t extent = 0;
  if (reduction_kernel) {
    if (!body.is_reduction_loop() || rranges.empty()) return false;
    for (size_t i = 0; i < body.num_ops(); ++i)
      if (body.op(i).opcode() == STAX_OP_REDUCTION) return false;  // it accumulates
    var = &rv[rranges.size() - 1];
    extent = rranges[rranges.size() - 1];
  } else {
    if (ranges.empty()) return false;
    var = &iv[ranges.size() - 1];
    extent = ranges[ranges.size() - 1];
  }
  if (extent < 16) return false;
  sdk::Expr e = body.index_of(op);
  if (!affine(e)) return false;
  const int64_t at0 = sdk::evaluate(e, iv.data(), rv.data());
  *var = 1;
  return sdk::evaluate(e, iv.data(), rv.data()) - at0 == 1;
}

}  // namespace

std::vector<bool> streaming_store_buffers(const sdk::Kernel& k, int64_t threshold_bytes) {
  const size_t n = k.num_buffers();
  std::vector<bool> out(n, false);
  if (threshold_bytes <= 0) return out;
  bool reduction_kernel = false;
  for (size_t b = 0; b < k.num_bodies(); ++b)
    reduction_kernel = reduction_kernel || k.body(b).is_reduction_loop();
  std::vector<int> stores(n, 0);
  std::vector<bool> loaded(n, false), ok(n, false);
  for (size_t b = 0; b < k.num_bodies(); ++b) {
    sdk::LoopBody body = k.body(b);
    for (size_t i = 0; i < body.num_ops(); ++i) {
      sdk::OpNode op = body.op(i);
      if (op.buffer() < 0 || static_cast<size_t>(op.buffer()) >= n) continue;
      const size_t buf = static_cast<size_t>(op.buffer());
      switch (op.opcode()) {
        case STAX_OP_LOAD:
        case STAX_OP_MASKED_LOAD: loaded[buf] = true; break;
        case STAX_OP_STORE_REDUCTION: stores[buf] += 2; break;  // per output: never streams
        case STAX_OP_STORE:
          ++stores[buf];
          ok[buf] = store_streams(k, body, op, reduction_kernel);
          break;
        default: break;
      }
    }
  }
  for (size_t i = 0; i < n; ++i) {
    sdk::Buffer b = k.buffer(i);
    const bool written = b.role() == sdk::BufferRole::Output || b.role() == sdk::BufferRole::InOut;
    out[i] = written && b.dtype() == sdk::DType::Float32 && stores[i] == 1 && ok[i] &&
             !loaded[i] && b.numel() > threshold_bytes / 4;
  }
  return out;
}

const std::string& streaming_prelude() {
  static const std::string text = R"STAX_NT(// ---- streaming stores (cpu_cpp, plugins/cpu_cpp/streaming_store.h) ----
typedef float stax_stream_vf __attribute__((ext_vector_type(16)));
// 16 floats at p: a non-temporal store (the line is written without being read first) when p is
// 64-byte aligned, as the instruction requires; else a normal store.
static inline void stax_stream16(float* p, stax_stream_vf v) {
  if (((unsigned long long)p & 63) == 0) __builtin_nontemporal_store(v, (stax_stream_vf*)p);
  else __builtin_memcpy(p, &v, sizeof v);
}
static inline void stax_stream16(float* p, const float* v) {
  stax_stream_vf x;
  __builtin_memcpy(&x, v, sizeof x);
  stax_stream16(p, x);
}
// Streaming stores are weakly ordered: this thread's become globally visible before it returns
// (and so before its chunk counts as done, whoever waits for it).
static inline void stax_stream_fence() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_sfence();
#else
  __atomic_thread_fence(__ATOMIC_SEQ_CST);
#endif
}
)STAX_NT";
  return text;
}

namespace {

// "32768K" / "32M" / "1048576" -> bytes; 0 when it does not parse.
int64_t parse_cache_size(const std::string& s) {
  size_t i = 0;
  int64_t v = 0;
  while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) {
    v = v * 10 + (s[i] - '0');
    if (v > (int64_t{1} << 40)) return 0;
    ++i;
  }
  if (i == 0) return 0;
  char unit = i < s.size() ? static_cast<char>(std::toupper(static_cast<unsigned char>(s[i]))) : 0;
  if (unit == 'K') return v << 10;
  if (unit == 'M') return v << 20;
  if (unit == 'G') return v << 30;
  return v;
}

int64_t sysfs_llc_bytes() {
  int64_t best_level = 0, bytes = 0;
  for (int index = 0; index < 16; ++index) {
    const std::string dir = "/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(index);
    std::ifstream level_file(dir + "/level"), size_file(dir + "/size"), type_file(dir + "/type");
    if (!level_file || !size_file) continue;
    int64_t level = 0;
    std::string size, type;
    level_file >> level;
    size_file >> size;
    if (type_file) type_file >> type;
    if (type == "Instruction") continue;
    const int64_t b = parse_cache_size(size);
    if (level > best_level && b > 0) {
      best_level = level;
      bytes = b;
    }
  }
  return bytes;
}

int64_t cpuid_llc_bytes() {
#if defined(__x86_64__) || defined(__i386__)
  unsigned a, b, c, d;
  // Deterministic cache parameters: leaf 4 (Intel), 0x8000001D (AMD); the highest level wins.
  for (unsigned leaf : {4u, 0x8000001Du}) {
    unsigned max_leaf = __get_cpuid_max(leaf & 0x80000000u, nullptr);
    if (max_leaf < leaf) continue;
    int64_t best_level = 0, bytes = 0;
    for (unsigned sub = 0; sub < 16; ++sub) {
      __cpuid_count(leaf, sub, a, b, c, d);
      const unsigned type = a & 31;
      if (type == 0) break;
      if (type == 2) continue;  // instruction cache
      const int64_t level = (a >> 5) & 7;
      const int64_t size = static_cast<int64_t>((b >> 22) + 1) * (((b >> 12) & 1023) + 1) *
                           ((b & 4095) + 1) * (static_cast<int64_t>(c) + 1);
      if (level > best_level) {
        best_level = level;
        bytes = size;
      }
    }
    if (bytes > 0) return bytes;
  }
#endif
  return 0;
}

}  // namespace

int64_t last_level_cache_bytes() {
  static const int64_t bytes = [] {
    int64_t b = sysfs_llc_bytes();
    return b > 0 ? b : cpuid_llc_bytes();
  }();
  return bytes;
}

}  // namespace stax::cpu
