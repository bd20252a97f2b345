// CppPrinter's methods, and the prelude every kernel starts with: the scalar ops, the 16-bit float
// storage types, the bounds-check macro STAX_CHECK that check_index prints and the exact row
// division's helpers (row_division.h).
#include "plugins/cpu_cpp/cpp_op_printer.h"

#include "plugins/cpu_cpp/cpp_printer.h"
#include "plugins/cpu_cpp/embedded_text.h"
#include "plugins/cpu_cpp/row_division.h"
#include "plugins/cpu_cpp/vector_printer.h"

namespace stax::cpu {

namespace {

using sdk::DType;

// What follows scalar_ops.hpp, half_bits.hpp and scalar_ops_f16.hpp (the 16-bit float storage
// types and their conversions) in the prelude: the bounds-check macro of indirect indexing.
constexpr const char kPreludeTail[] = R"(

// A failed check: reported to the host (cpu_backend.cpp's KernelFault has this layout) and the
// kernel stops. An indirect index out of bounds reports the index as loaded and the size.
struct stax_fault {
  const char* message;
  long long index;
  long long size;
  int has_index;
};
struct stax_index_fault {
  long long index, size;
};
static inline void stax_fail(stax_fault* f, const char* message) { f->message = message; }
static inline void stax_fail(stax_fault* f, stax_index_fault i) {
  f->message = "index out of bounds";
  f->index = i.index;
  f->size = i.size;
  f->has_index = 1;
}
#define STAX_CHECK(cond, fault)     \
  do {                              \
    if (!(cond)) {                  \
      stax_fail(stax_error, fault); \
      return;                       \
    }                               \
  } while (0)
)";

sdk::CStyleTables cpp_tables() {
  sdk::CStyleTables t;
  t.storage_types[static_cast<int>(DType::Float16)] = "stax_half";
  t.storage_types[static_cast<int>(DType::BFloat16)] = "stax_bf16";
  t.pointer_qualifier = "__restrict";
  t.hoist_invariants = true;
  return t;
}

}  // namespace

const std::string& kernel_prelude() {
  static const std::string prelude = std::string("// Prelude: stax/sdk/scalar_ops.hpp\n") +
                                     embedded::kScalarOps + "\n// Prelude: half_bits.hpp\n" +
                                     embedded::kHalfBits + "\n// Prelude: scalar_ops_f16.hpp\n" +
                                     embedded::kScalarOpsF16 + kPreludeTail +
                                     kRowDivisionPrelude;
  return prelude;
}

CppPrinter::CppPrinter(const sdk::Kernel& k) : sdk::CStylePrinter(k, cpp_tables()) {}

std::string CppPrinter::check_index(const std::string& cond, const std::string& index,
                                    const std::string&, int64_t size) const {
  return tables().check_macro + "(" + cond + ", (stax_index_fault{(long long)(" + index +
         "), " + std::to_string(size) + "LL}));";
}

std::string CppPrinter::reduction(sdk::ReductionType type, DType dtype, std::string value) {
  std::string acc = sdk::CStylePrinter::reduction(type, dtype, value);
  switch (type) {
    case sdk::ReductionType::Sum: combine_[acc] = STAX_OP_add; break;
    case sdk::ReductionType::Prod: combine_[acc] = STAX_OP_mul; break;
    case sdk::ReductionType::Max: combine_[acc] = STAX_OP_maximum; break;
    case sdk::ReductionType::Min: combine_[acc] = STAX_OP_minimum; break;
    case sdk::ReductionType::Any: combine_[acc] = STAX_OP_logical_or; break;
    case sdk::ReductionType::All: combine_[acc] = STAX_OP_logical_and; break;
    default: break;  // argmax / argmin: sequential only
  }
  return acc;
}

void CppPrinter::store(const sdk::Buffer& b, const sdk::Expr& index, std::string value) {
  if (!streamed_ || !(*streamed_)[static_cast<size_t>(b.index())]) {
    sdk::CStylePrinter::store(b, index, value);
    return;
  }
  std::string lane = lane_offset_, segment = segment_offset_;  // the address of element 0
  lane_offset_.clear();
  segment_offset_.clear();
  std::string idx = format_index(index);
  lane_offset_ = lane;
  segment_offset_ = segment;
  if (b.offset() != 0) idx = std::to_string(b.offset()) + " + " + idx;
  StreamStore st{"stax_st" + std::to_string(stream_count_++),
                 buffer_name(b) + " + (" + idx + ")"};
  st.aligned_rows = aligned_rows(b, index);
  out().lines.push_back(st.array + "[stax_seg] = " + value + ";");
  stream_stores_.push_back(st);
}

bool CppPrinter::aligned_rows(const sdk::Buffer& b, const sdk::Expr& index) const {
  sdk::Span<int64_t> ranges = kernel().ranges(), rranges = kernel().reduction_ranges();
  std::vector<int64_t> iv(ranges.size() + 1, 0), rv(rranges.size() + 1, 0);
  const int64_t at0 = sdk::evaluate(index, iv.data(), rv.data());
  if ((at0 + b.offset()) % kVectorLanes != 0) return false;
  auto coefficient_ok = [&](std::vector<int64_t>& vars, size_t k) {
    vars[k] = 1;
    const int64_t c = sdk::evaluate(index, iv.data(), rv.data()) - at0;
    vars[k] = 0;
    return c % kVectorLanes == 0;
  };
  for (size_t k = 0; k < ranges.size(); ++k)
    if (static_cast<int32_t>(k) != lane_dim_ && !coefficient_ok(iv, k)) return false;
  for (size_t k = 0; k < rranges.size(); ++k)
    if (static_cast<int32_t>(k) != segment_dim_ && !coefficient_ok(rv, k)) return false;
  return true;
}

}  // namespace stax::cpu
