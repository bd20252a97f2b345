#include "core/tensor/npy.h"

#include "core/support/atomic_file.h"

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>

namespace stax {

static_assert(std::endian::native == std::endian::little,
              "the .npy reader/writer assumes a little-endian host");

namespace {

constexpr const char* kStage = "npy";
constexpr std::string_view kMagic("\x93NUMPY", 6);

[[noreturn]] void fail(const std::string& name, const std::string& message) {
  throw Error(kStage, name, message);
}

// ---- header dict --------------------------------------------------------------------------------

struct NpyHeader {
  std::string descr;
  bool fortran_order = false;
  Shape shape;
};

// Parses the Python dict literal of a .npy header, e.g.
//   {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }
class HeaderParser {
 public:
  HeaderParser(std::string_view text, const std::string& name) : text_(text), name_(name) {}

  NpyHeader parse() {
    NpyHeader h;
    bool have_descr = false, have_fortran = false, have_shape = false;
    skip_ws();
    expect('{', "at the start of the header");
    for (;;) {
      skip_ws();
      if (try_eat('}')) break;
      std::string key = parse_string("a key");
      skip_ws();
      expect(':', "after key '" + key + "'");
      skip_ws();
      if (key == "descr") {
        if (have_descr) bad("duplicate key 'descr'");
        if (peek() == '[')
          fail(name_, "unsupported descr: structured (record) dtypes are not supported");
        h.descr = parse_string("the descr string");
        have_descr = true;
      } else if (key == "fortran_order") {
        if (have_fortran) bad("duplicate key 'fortran_order'");
        h.fortran_order = parse_bool();
        have_fortran = true;
      } else if (key == "shape") {
        if (have_shape) bad("duplicate key 'shape'");
        h.shape = parse_shape();
        have_shape = true;
      } else {
        bad("unexpected key '" + key + "'");
      }
      skip_ws();
      if (try_eat(',')) continue;
      expect('}', "after the value of '" + key + "'");
      break;
    }
    skip_ws();
    while (pos_ < text_.size() && text_[pos_] == '\0') ++pos_;  // tolerate NUL padding
    if (pos_ != text_.size()) bad("unexpected text after the closing '}'");
    if (!have_descr) bad("missing key 'descr'");
    if (!have_fortran) bad("missing key 'fortran_order'");
    if (!have_shape) bad("missing key 'shape'");
    return h;
  }

 private:
  [[noreturn]] void bad(const std::string& what) const {
    std::string excerpt(text_.substr(0, 200));
    while (!excerpt.empty() && (excerpt.back() == ' ' || excerpt.back() == '\n'))
      excerpt.pop_back();
    fail(name_, "bad header dict: " + what + " (at offset " + std::to_string(pos_) +
                    " of header " + excerpt + ")");
  }

  char peek() const { return pos_ < text_.size() ? text_[pos_] : '\0'; }

  void skip_ws() {
    while (pos_ < text_.size() &&
           (text_[pos_] == ' ' || text_[pos_] == '\t' || text_[pos_] == '\n' ||
            text_[pos_] == '\r'))
      ++pos_;
  }

  bool try_eat(char c) {
    if (peek() != c || pos_ >= text_.size()) return false;
    ++pos_;
    return true;
  }

  void expect(char c, const std::string& context) {
    if (!try_eat(c)) bad(std::string("expected '") + c + "' " + context);
  }

  std::string parse_string(const std::string& what) {
    char q = peek();
    if (q != '\'' && q != '"') bad("expected " + what + " (a quoted string)");
    ++pos_;
    std::string s;
    while (pos_ < text_.size() && text_[pos_] != q) {
      if (text_[pos_] == '\\' && pos_ + 1 < text_.size()) ++pos_;
      s += text_[pos_++];
    }
    if (pos_ >= text_.size()) bad("unterminated string");
    ++pos_;
    return s;
  }

  bool parse_bool() {
    if (text_.substr(pos_, 4) == "True") {
      pos_ += 4;
      return true;
    }
    if (text_.substr(pos_, 5) == "False") {
      pos_ += 5;
      return false;
    }
    bad("expected True or False for 'fortran_order'");
  }

  Shape parse_shape() {
    Shape shape;
    expect('(', "to open the shape tuple");
    for (;;) {
      skip_ws();
      if (try_eat(')')) break;
      shape.push_back(parse_dim());
      skip_ws();
      if (try_eat('L')) skip_ws();  // Python 2 long literals: (3L, 4L)
      if (try_eat(',')) continue;
      expect(')', "to close the shape tuple");
      break;
    }
    return shape;
  }

  int64_t parse_dim() {
    if (peek() == '-') bad("negative dimension in the shape");
    if (peek() < '0' || peek() > '9') bad("expected an integer dimension in the shape");
    int64_t v = 0;
    while (peek() >= '0' && peek() <= '9') {
      int digit = peek() - '0';
      if (v > (std::numeric_limits<int64_t>::max() - digit) / 10) bad("dimension too large");
      v = v * 10 + digit;
      ++pos_;
    }
    return v;
  }

  std::string_view text_;
  const std::string& name_;
  size_t pos_ = 0;
};

// ---- descr --------------------------------------------------------------------------------------

struct Descr {
  char kind;    // 'f', 'i', 'u', 'b', 'V'
  int size;     // bytes per element in the file
  bool swap;    // big-endian data
  DType dtype;  // the Stax dtype it reads as
};

Descr parse_descr(const std::string& descr, const std::string& name) {
  auto unsupported = [&](const std::string& why) -> Descr {
    fail(name, "unsupported descr '" + descr + "'" + (why.empty() ? "" : " (" + why + ")") +
                   "; Stax reads f2 f4 f8, i1 i2 i4 i8, u1 u2 u4 u8, b1, V2 (bfloat16), c8 and c16, in "
                   "any byte order");
  };
  std::string_view s(descr);
  char order = '=';
  if (!s.empty() && (s[0] == '<' || s[0] == '>' || s[0] == '|' || s[0] == '=')) {
    order = s[0];
    s.remove_prefix(1);
  }
  if (s.size() < 2) return unsupported("");
  char kind = s[0];
  std::string_view digits = s.substr(1);
  if (digits.size() > 2 || !std::all_of(digits.begin(), digits.end(),
                                        [](char c) { return c >= '0' && c <= '9'; }))
    return unsupported("");
  int size = std::stoi(std::string(digits));
  bool swap = order == '>' && size > 1;
  auto make = [&](DType t) { return Descr{kind, size, swap, t}; };
  switch (kind) {
    case 'f':
      if (size == 2) return make(DType::Float16);
      if (size == 4) return make(DType::Float32);
      if (size == 8) return make(DType::Float64);
      return unsupported(size > 8 ? "extended precision" : "");
    case 'i':
      if (size == 1) return make(DType::Int8);
      if (size == 2) return make(DType::Int16);
      if (size == 4) return make(DType::Int32);
      if (size == 8) return make(DType::Int64);
      return unsupported("");
    case 'u':
      if (size == 1) return make(DType::UInt8);
      if (size == 2) return make(DType::UInt16);
      if (size == 4) return make(DType::UInt32);
      if (size == 8) return make(DType::UInt64);
      return unsupported("");
    case 'b':
      if (size == 1) return make(DType::Bool);
      return unsupported("");
    case 'V':
      if (size == 2) return make(DType::BFloat16);
      return unsupported("raw void data");
    case 'c':
      if (size == 8) return make(DType::Complex64);
      if (size == 16) return make(DType::Complex128);
      return unsupported(size > 16 ? "extended precision" : "");
    case 'U': case 'S': case 'a': return unsupported("strings");
    case 'O': return unsupported("Python objects");
    case 'M': case 'm': return unsupported("datetime");
    default: return unsupported("");
  }
}

// Decodes one element of `d` (file bytes at `in`) into the Stax element at `out`.
void decode_element(const Descr& d, const char* in, std::byte* out, const std::string& name) {
  unsigned char b[16];
  std::memcpy(b, in, static_cast<size_t>(d.size));
  if (d.swap && d.kind == 'c') {  // each part on its own
    std::reverse(b, b + d.size / 2);
    std::reverse(b + d.size / 2, b + d.size);
  } else if (d.swap) {
    std::reverse(b, b + d.size);
  }
  switch (d.kind) {
    case 'b': {
      uint8_t v = b[0] != 0;
      std::memcpy(out, &v, 1);
      return;
    }
    default: break;
  }
  std::memcpy(out, b, static_cast<size_t>(d.size));  // same layout as the Stax dtype
}

Shape fortran_strides(const Shape& sizes) {
  Shape st(sizes.size());
  int64_t acc = 1;
  for (size_t i = 0; i < sizes.size(); ++i) {
    st[i] = acc;
    acc *= std::max<int64_t>(sizes[i], 1);
  }
  return st;
}

uint64_t read_le(std::string_view bytes, size_t at, size_t n) {
  uint64_t v = 0;
  for (size_t i = 0; i < n; ++i)
    v |= static_cast<uint64_t>(static_cast<uint8_t>(bytes[at + i])) << (8 * i);
  return v;
}

}  // namespace

// ---- reading ------------------------------------------------------------------------------------

Tensor npy_from_bytes(std::string_view bytes, const std::string& name) {
  if (bytes.size() < kMagic.size() || bytes.substr(0, kMagic.size()) != kMagic)
    fail(name, "bad magic: not a .npy file (it does not start with \"\\x93NUMPY\")");
  if (bytes.size() < 8) fail(name, "truncated header: the file ends inside the preamble");
  int major = static_cast<uint8_t>(bytes[6]), minor = static_cast<uint8_t>(bytes[7]);
  if (major < 1 || major > 3)
    fail(name, "unsupported .npy format version " + std::to_string(major) + "." +
                   std::to_string(minor) + " (Stax reads 1.0, 2.0 and 3.0)");
  size_t len_size = major == 1 ? 2 : 4;
  size_t preamble = 8 + len_size;
  if (bytes.size() < preamble) fail(name, "truncated header: the file ends inside the preamble");
  uint64_t header_len = read_le(bytes, 8, len_size);
  if (bytes.size() - preamble < header_len)
    fail(name, "truncated header: the preamble announces a " + std::to_string(header_len) +
                   "-byte header but only " + std::to_string(bytes.size() - preamble) +
                   " bytes follow");
  NpyHeader h = HeaderParser(bytes.substr(preamble, header_len), name).parse();
  Descr d = parse_descr(h.descr, name);

  int64_t numel = 1;
  for (int64_t s : h.shape) {
    if (s != 0 && numel > std::numeric_limits<int64_t>::max() / 16 / s)
      fail(name, "shape " + shape_str(h.shape) + " is too large");
    numel *= s;
  }
  uint64_t data_bytes = static_cast<uint64_t>(numel) * static_cast<uint64_t>(d.size);
  size_t data_start = preamble + header_len;
  uint64_t available = bytes.size() - data_start;
  if (available < data_bytes)
    fail(name, "truncated data: shape " + shape_str(h.shape) + " of '" + h.descr + "' needs " +
                   std::to_string(data_bytes) + " bytes but only " + std::to_string(available) +
                   " follow the header");

  Shape strides = h.fortran_order ? fortran_strides(h.shape) : contiguous_strides(h.shape);
  Tensor t = Tensor::empty_strided(h.shape, strides, d.dtype);
  // The file holds the elements in storage order (C or Fortran), so decode them linearly.
  const char* in = bytes.data() + data_start;
  std::byte* out = t.storage()->data();
  size_t out_size = dtype_size(d.dtype);
  bool raw = !d.swap && static_cast<size_t>(d.size) == out_size && d.kind != 'b' &&
             !(d.kind == 'u' && d.size == 8);
  if (raw) {
    if (data_bytes > 0) std::memcpy(out, in, data_bytes);
  } else {
    for (int64_t i = 0; i < numel; ++i)
      decode_element(d, in + i * d.size, out + i * static_cast<int64_t>(out_size), name);
  }
  return t;
}

Tensor load_npy(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) fail(path, "is a directory, not a .npy file");
  std::ifstream f(path, std::ios::binary);
  if (!f) fail(path, std::string("cannot open for reading: ") + std::strerror(errno));
  std::string bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  if (f.bad()) fail(path, "read error");
  return npy_from_bytes(bytes, path);
}

// ---- writing ------------------------------------------------------------------------------------

std::string npy_descr(DType dtype) {
  switch (dtype) {
    case DType::Float32: case DType::BFloat16: return "<f4";
    case DType::Float64: return "<f8";
    case DType::Float16: return "<f2";
    case DType::Int64: return "<i8";
    case DType::Int32: return "<i4";
    case DType::Int8: return "|i1";
    case DType::UInt8: return "|u1";
    case DType::Bool: return "|b1";
    case DType::Complex64: return "<c8";
    case DType::Complex128: return "<c16";
    case DType::Int16: return "<i2";
    case DType::UInt16: return "<u2";
    case DType::UInt32: return "<u4";
    case DType::UInt64: return "<u8";
  }
  throw Error(kStage, "npy_descr", "invalid dtype");
}

std::string npy_to_bytes(const Tensor& tensor) {
  Tensor t = tensor.dtype() == DType::BFloat16 ? tensor.to(DType::Float32) : tensor.contiguous();
  std::string dict = "{'descr': '" + npy_descr(t.dtype()) +
                     "', 'fortran_order': False, 'shape': " + shape_str(t.sizes()) + ", }";
  // Pad with spaces and a final '\n' so that the data starts at a multiple of 64 bytes.
  auto padded_len = [&](size_t preamble) {
    size_t unpadded = preamble + dict.size() + 1;
    return (unpadded + 63) / 64 * 64 - preamble;
  };
  int major = 1;
  size_t header_len = padded_len(10);
  if (header_len > 0xffff) {
    major = 2;
    header_len = padded_len(12);
  }
  std::string out(kMagic);
  out += static_cast<char>(major);
  out += '\0';
  size_t len_size = major == 1 ? 2 : 4;
  for (size_t i = 0; i < len_size; ++i) out += static_cast<char>((header_len >> (8 * i)) & 0xff);
  out += dict;
  out.append(header_len - dict.size() - 1, ' ');
  out += '\n';
  out.append(reinterpret_cast<const char*>(t.data_ptr()), static_cast<size_t>(t.nbytes()));
  return out;
}

void save_npy(const std::string& path, const Tensor& t) {
  write_file_atomically(path, npy_to_bytes(t), "npy");
}

}  // namespace stax
