// Tests of core/tensor/npy.h: .npy round trips, hand-made files (Fortran order, big-endian,
// version 2.0, the 16- to 64-bit integer dtypes), malformed files, and interoperation with numpy when available.
#include "core/tensor/npy.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <string>
#include <vector>

namespace stax {
namespace {

namespace fs = std::filesystem;

// A fresh temporary directory per test, removed afterwards.
class NpyTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (fs::temp_directory_path() / "stax_npy_test_XXXXXX").string();
    ASSERT_NE(mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  void write_file(const std::string& name, const std::string& bytes) const {
    std::ofstream f(path(name), std::ios::binary);
    f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  }

  fs::path dir_;
};

// A .npy file with the given header dict text and raw data, padded like numpy pads.
std::string make_npy(const std::string& dict, const std::string& data, int major = 1) {
  size_t preamble = major == 1 ? 10 : 12;
  std::string header = dict;
  while ((preamble + header.size() + 1) % 64 != 0) header += ' ';
  header += '\n';
  std::string out("\x93NUMPY", 6);
  out += static_cast<char>(major);
  out += '\0';
  for (size_t i = 0; i < preamble - 8; ++i)
    out += static_cast<char>((header.size() >> (8 * i)) & 0xff);
  return out + header + data;
}

template <class T>
std::string raw_bytes(const std::vector<T>& v, bool big_endian = false) {
  std::string out;
  for (const T& x : v) {
    char b[sizeof(T)];
    std::memcpy(b, &x, sizeof(T));
    if (big_endian) std::reverse(b, b + sizeof(T));
    out.append(b, sizeof(T));
  }
  return out;
}

template <class F>
void expect_error(F&& f, const std::string& fragment) {
  try {
    f();
    ADD_FAILURE() << "expected a stax::Error containing \"" << fragment << "\"";
  } catch (const Error& e) {
    EXPECT_EQ(e.stage(), "npy");
    EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
  }
}

// arange(24) reshaped (2, 3, 4) and mapped through f, in dtype dt.
template <class F>
Tensor pattern(DType dt, F&& f) {
  std::vector<double> v;
  for (int i = 0; i < 24; ++i) v.push_back(f(static_cast<double>(i)));
  return Tensor::from_vector<double>({2, 3, 4}, v, dt);
}

// ---- round trips --------------------------------------------------------------------------------

TEST_F(NpyTest, RoundTripsEveryDType) {
  for (DType dt : {DType::Float32, DType::Float64, DType::Float16, DType::Int64, DType::Int32,
                   DType::Int8, DType::UInt8, DType::Bool}) {
    Tensor t = pattern(dt, [](double i) { return i * 3.25 - 20; });
    std::string file = path(std::string(dtype_name(dt)) + ".npy");
    save_npy(file, t);
    Tensor back = load_npy(file);
    EXPECT_TRUE(back.equal(t)) << dtype_name(dt) << ": " << back.summary();
    EXPECT_TRUE(back.is_contiguous());
  }
}

TEST_F(NpyTest, WritesNumpyLayout) {
  Tensor t = Tensor::from_vector<float>({2, 3}, {1, 2, 3, 4, 5, 6});
  std::string bytes = npy_to_bytes(t);
  ASSERT_EQ(bytes.substr(0, 8), std::string("\x93NUMPY\x01\x00", 8));
  size_t header_len = static_cast<uint8_t>(bytes[8]) | (static_cast<uint8_t>(bytes[9]) << 8);
  EXPECT_EQ((10 + header_len) % 64, 0u);
  std::string header = bytes.substr(10, header_len);
  EXPECT_EQ(header.rfind("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }", 0), 0u);
  EXPECT_EQ(header.back(), '\n');
  EXPECT_EQ(bytes.size(), 10 + header_len + 24);
  EXPECT_EQ(bytes.substr(10 + header_len), raw_bytes<float>({1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(npy_descr(DType::Bool), "|b1");
  EXPECT_EQ(npy_descr(DType::Int8), "|i1");
  EXPECT_EQ(npy_descr(DType::Float16), "<f2");
}

TEST_F(NpyTest, ScalarsEmptyAndNonContiguous) {
  Tensor s = Tensor::scalar(-1.5, DType::Float64);
  std::string bytes = npy_to_bytes(s);
  EXPECT_NE(bytes.find("'shape': (), }"), std::string::npos);
  Tensor sb = npy_from_bytes(bytes);
  EXPECT_EQ(sb.dim(), 0);
  EXPECT_EQ(sb.item(), -1.5);

  Tensor e = Tensor::zeros({0, 3}, DType::Int32);
  Tensor eb = npy_from_bytes(npy_to_bytes(e));
  EXPECT_EQ(eb.sizes(), (Shape{0, 3}));
  EXPECT_EQ(eb.dtype(), DType::Int32);

  Tensor m = Tensor::from_vector<int64_t>({2, 3}, {0, 1, 2, 3, 4, 5});
  Tensor mt = m.as_strided({3, 2}, {1, 3}, 0);  // transposed view: written in C order
  Tensor back = npy_from_bytes(npy_to_bytes(mt));
  EXPECT_NE(npy_to_bytes(mt).find("'shape': (3, 2)"), std::string::npos);
  EXPECT_EQ(back.to_vector<int64_t>(), (std::vector<int64_t>{0, 3, 1, 4, 2, 5}));

  Tensor one = Tensor::from_vector<uint8_t>({1}, {200});
  EXPECT_NE(npy_to_bytes(one).find("'shape': (1,)"), std::string::npos);
}

TEST_F(NpyTest, BFloat16IsSavedAsFloat32) {
  Tensor t = Tensor::randn({4, 5}, DType::BFloat16, 3);
  std::string bytes = npy_to_bytes(t);
  EXPECT_NE(bytes.find("'descr': '<f4'"), std::string::npos);
  Tensor back = npy_from_bytes(bytes);
  EXPECT_EQ(back.dtype(), DType::Float32);
  EXPECT_TRUE(back.to(DType::BFloat16).equal(t));  // exact
  // '<V2' (ml_dtypes' bfloat16) reads as bfloat16 bits.
  Tensor v = npy_from_bytes(
      make_npy("{'descr': '<V2', 'fortran_order': False, 'shape': (2,), }",
               raw_bytes<uint16_t>({0x3f80, 0xc049})));
  EXPECT_EQ(v.dtype(), DType::BFloat16);
  EXPECT_EQ(v.to_vector<float>(), (std::vector<float>{1.0f, -3.140625f}));
}

TEST_F(NpyTest, LargeHeaderUsesVersion2) {
  Shape many(25000, 1);  // a 25000-d tensor: its shape tuple alone exceeds 65535 bytes
  Tensor t = Tensor::full(many, 7.0, DType::Int8);
  std::string bytes = npy_to_bytes(t);
  EXPECT_EQ(bytes[6], '\x02');
  Tensor back = npy_from_bytes(bytes);
  EXPECT_EQ(back.dim(), 25000);
  EXPECT_EQ(back.item(), 7.0);
}

// ---- hand-made files ----------------------------------------------------------------------------

TEST_F(NpyTest, ReadsFortranOrderAsStridedTensor) {
  // Logical [[1, 2, 3], [4, 5, 6]] stored column-major: 1 4 2 5 3 6.
  std::string bytes = make_npy("{'descr': '<f4', 'fortran_order': True, 'shape': (2, 3), }",
                               raw_bytes<float>({1, 4, 2, 5, 3, 6}));
  Tensor t = npy_from_bytes(bytes);
  EXPECT_EQ(t.sizes(), (Shape{2, 3}));
  EXPECT_EQ(t.strides(), (Shape{1, 2}));
  EXPECT_FALSE(t.is_contiguous());
  EXPECT_EQ(t.to_vector<float>(), (std::vector<float>{1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(t.item_as_double({0, 2}), 3.0);
  // 1-d Fortran order is plain.
  Tensor v = npy_from_bytes(make_npy("{'fortran_order': True, 'shape': (3,), 'descr': '<i2'}",
                                     raw_bytes<int16_t>({-5, 300, 7})));
  EXPECT_EQ(v.dtype(), DType::Int16);
  EXPECT_EQ(v.to_vector<int64_t>(), (std::vector<int64_t>{-5, 300, 7}));
}

TEST_F(NpyTest, ReadsBigEndianBySwapping) {
  Tensor f = npy_from_bytes(make_npy("{'descr': '>f4', 'fortran_order': False, 'shape': (3,), }",
                                     raw_bytes<float>({1.5f, -2.0f, 1e-40f}, true)));
  EXPECT_EQ(f.dtype(), DType::Float32);
  EXPECT_EQ(f.to_vector<float>(), (std::vector<float>{1.5f, -2.0f, 1e-40f}));
  Tensor l = npy_from_bytes(make_npy("{'descr': '>i8', 'fortran_order': False, 'shape': (2,), }",
                                     raw_bytes<int64_t>({-3, int64_t{1} << 40}, true)));
  EXPECT_EQ(l.to_vector<int64_t>(), (std::vector<int64_t>{-3, int64_t{1} << 40}));
  Tensor h = npy_from_bytes(make_npy("{'descr': '>f2', 'fortran_order': False, 'shape': (2,), }",
                                     raw_bytes<uint16_t>({0x3c00, 0xc100}, true)));
  EXPECT_EQ(h.dtype(), DType::Float16);
  EXPECT_EQ(h.to_vector<float>(), (std::vector<float>{1.0f, -2.5f}));
  Tensor d = npy_from_bytes(make_npy("{'descr': '>f8', 'fortran_order': True, 'shape': (2, 2), }",
                                     raw_bytes<double>({1, 3, 2, 4}, true)));
  EXPECT_EQ(d.to_vector<double>(), (std::vector<double>{1, 2, 3, 4}));
}

TEST_F(NpyTest, ReadsVersion2AndUnsignedTypes) {
  Tensor v2 = npy_from_bytes(
      make_npy("{'descr': '<u2', 'fortran_order': False, 'shape': (2,), }",
               raw_bytes<uint16_t>({65535, 1}), /*major=*/2));
  EXPECT_EQ(v2.dtype(), DType::UInt16);
  EXPECT_EQ(v2.to_vector<int64_t>(), (std::vector<int64_t>{65535, 1}));
  Tensor u4 = npy_from_bytes(make_npy("{'descr': '<u4', 'fortran_order': False, 'shape': (1,)}",
                                      raw_bytes<uint32_t>({4000000000u})));
  EXPECT_EQ(u4.dtype(), DType::UInt32);
  EXPECT_EQ(u4.get_int(0), 4000000000LL);
  Tensor u8 = npy_from_bytes(make_npy("{'descr': '<u8', 'fortran_order': False, 'shape': (1,)}",
                                      raw_bytes<uint64_t>({123})));
  EXPECT_EQ(u8.dtype(), DType::UInt64);
  EXPECT_EQ(u8.get_int(0), 123);
  // uint64 keeps values from 2^63 on (int64 could not hold them).
  Tensor big = npy_from_bytes(make_npy("{'descr': '>u8', 'fortran_order': False, 'shape': (1,)}",
                                       raw_bytes<uint64_t>({(uint64_t{1} << 63) + 5}, true)));
  EXPECT_EQ(static_cast<uint64_t>(big.get_int(0)), (uint64_t{1} << 63) + 5);
  Tensor b = npy_from_bytes(make_npy("{'descr': '|b1', 'fortran_order': False, 'shape': (3,)}",
                                     std::string("\x00\x02\x01", 3)));
  EXPECT_EQ(b.to_vector<int64_t>(), (std::vector<int64_t>{0, 1, 1}));
  EXPECT_EQ(static_cast<int>(b.data_ptr()[1]), 1);  // normalized
  // Python 2 style long dims and double-quoted strings.
  Tensor p2 = npy_from_bytes(make_npy("{\"descr\": \"<i4\", \"fortran_order\": False, "
                                      "\"shape\": (1L, 2L), }",
                                      raw_bytes<int32_t>({9, -9})));
  EXPECT_EQ(p2.sizes(), (Shape{1, 2}));
  EXPECT_EQ(p2.get_int(1), -9);
}

// ---- malformed files ----------------------------------------------------------------------------

TEST_F(NpyTest, MalformedFilesNameTheFileAndTheProblem) {
  std::string good = make_npy("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }",
                              raw_bytes<float>({1, 2, 3, 4, 5, 6}));
  // Issue 12 "Also": a directory used to give a message without its path.
  expect_error([&] { load_npy(path("")); }, path("") + ": error: is a directory, not a .npy file");
  write_file("bad_magic.npy", "PK\x03\x04 not numpy at all");
  expect_error([&] { load_npy(path("bad_magic.npy")); },
               path("bad_magic.npy") + ": error: bad magic");
  write_file("short.npy", good.substr(0, good.size() - 5));
  expect_error([&] { load_npy(path("short.npy")); },
               path("short.npy") +
                   ": error: truncated data: shape (2, 3) of '<f4' needs 24 bytes but only 19");
  write_file("cut_header.npy", good.substr(0, 40));
  expect_error([&] { load_npy(path("cut_header.npy")); }, "truncated header");
  std::string v9 = good;
  v9[6] = 9;
  expect_error([&] { npy_from_bytes(v9, "v9.npy"); }, "unsupported .npy format version 9.0");
  expect_error(
      [] {
        npy_from_bytes(make_npy("{'descr': '<c32', 'fortran_order': False, 'shape': (1,), }",
                                std::string(32, '\0')),
                       "c.npy");
      },
      "c.npy: error: unsupported descr '<c32' (extended precision)");
  {  // big-endian complex64: each part byte-swapped on its own (1 + 2j)
    const std::string be("\x3f\x80\x00\x00\x40\x00\x00\x00", 8);
    Tensor c = npy_from_bytes(make_npy("{'descr': '>c8', 'fortran_order': False, 'shape': (1,), }",
                                       be), "be.npy");
    EXPECT_EQ(c.dtype(), DType::Complex64);
    EXPECT_EQ(c.to_string(), "[1+2j]");
  }
  expect_error(
      [] {
        npy_from_bytes(make_npy("{'descr': [('a', '<f4')], 'fortran_order': False, "
                                "'shape': (1,), }",
                                "1234"),
                       "rec.npy");
      },
      "structured");
  expect_error(
      [] { npy_from_bytes(make_npy("{'descr': '<f4', 'fortran_order': False, }", ""), "m.npy"); },
      "bad header dict: missing key 'shape'");
  expect_error(
      [] {
        npy_from_bytes(make_npy("{'descr': '<f4', 'fortran_order': Maybe, 'shape': (1,), }",
                                "1234"),
                       "m.npy");
      },
      "bad header dict: expected True or False");
  expect_error(
      [] {
        npy_from_bytes(make_npy("{'descr': '<f4', 'fortran_order': False, 'shape': (-1,), }", ""),
                       "m.npy");
      },
      "negative dimension");
  expect_error(
      [] {
        npy_from_bytes(
            make_npy("{'descr': '<f4', 'fortran_order': False, 'shape': (1,), 'x': 1}", "1234"),
            "m.npy");
      },
      "unexpected key 'x'");
  expect_error(
      [] { npy_from_bytes(make_npy("['descr', '<f4']", "1234"), "m.npy"); },
      "expected '{' at the start of the header");
  expect_error([&] { load_npy(path("does_not_exist.npy")); },
               path("does_not_exist.npy") + ": error: cannot open for reading");
  expect_error([&] { save_npy(path("no_dir/x.npy"), Tensor::zeros({1})); },
               "cannot open for writing");
}

// ---- numpy interop ------------------------------------------------------------------------------

bool have_numpy() { return std::system("python3 -c 'import numpy' >/dev/null 2>&1") == 0; }

int run_python(const fs::path& dir, const std::string& name, const std::string& script) {
  fs::path file = dir / name;
  std::ofstream(file) << script;
  std::string cmd = "python3 '" + file.string() + "' '" + dir.string() + "'";
  return std::system(cmd.c_str());
}

constexpr const char* kNumpyWrites = R"PY(
import sys, numpy as np
d = sys.argv[1]
a = np.arange(24, dtype=np.float64).reshape(2, 3, 4)
np.save(d + '/f4.npy', (a * 0.25 - 1).astype('<f4'))
np.save(d + '/f8.npy', a / 3.0)
np.save(d + '/f2.npy', (a * 0.125 - 1).astype('<f2'))
np.save(d + '/i8.npy', (a.astype('<i8') - 12) * 1000000000000)
np.save(d + '/i4.npy', (a * -7).astype('<i4'))
np.save(d + '/i1.npy', (a * 11 - 128).astype('i1'))
np.save(d + '/u1.npy', (a * 11).astype('u1'))
np.save(d + '/b1.npy', a % 3 == 0)
np.save(d + '/fortran.npy', np.asfortranarray((a * 0.5).astype('<f4')))
np.save(d + '/big_f4.npy', (a * 0.25 - 1).astype('>f4'))
np.save(d + '/big_i8.npy', (a.astype('>i8') - 12) * 1000000000000)
np.save(d + '/scalar.npy', np.float64(2.5))
np.save(d + '/empty.npy', np.zeros((0, 3), dtype='<f4'))
np.save(d + '/i2.npy', (a * -1000).astype('<i2'))
np.save(d + '/special_f4.npy', np.array([np.nan, np.inf, -np.inf, -0.0, 1e-45], dtype='<f4'))
np.save(d + '/special_f2.npy', np.array([np.inf, 6.1e-5, 6e-8, 65504, -0.0], dtype='<f2'))
with open(d + '/v2.npy', 'wb') as f:
    np.lib.format.write_array(f, (a * 2).astype('<f8'), version=(2, 0))
)PY";

constexpr const char* kNumpyReads = R"PY(
import sys, numpy as np
d = sys.argv[1]
a = np.arange(24, dtype=np.float64).reshape(2, 3, 4)
def check(name, dtype, expected):
    x = np.load(d + '/' + name)
    ok = x.dtype == np.dtype(dtype) and x.shape == np.shape(expected) and \
        np.array_equal(x, np.asarray(expected, dtype=dtype))
    if not ok:
        print('numpy check failed for', name, x.dtype, x.shape, x)
        sys.exit(1)
check('f4.npy', '<f4', a * 0.25 - 1)
check('f8.npy', '<f8', a / 3.0)
check('f2.npy', '<f2', a * 0.125 - 1)
check('i8.npy', '<i8', (a.astype('<i8') - 12) * 1000000000000)
check('i4.npy', '<i4', a * -7)
check('i1.npy', 'i1', a * 11 - 128)
check('u1.npy', 'u1', a * 11)
check('b1.npy', '?', a % 3 == 0)
check('bf16.npy', '<f4', a * 0.5 - 3)
check('transposed.npy', '<i4', np.arange(6).reshape(2, 3).T)
check('scalar.npy', '<f8', np.float64(-0.75))
check('empty.npy', '<i8', np.zeros((2, 0)))
x = np.load(d + '/rand.npy')
assert x.shape == (1000,) and x.dtype == np.float32 and 0 <= x.min() and x.max() < 1
sys.exit(0)
)PY";

TEST_F(NpyTest, ReadsFilesWrittenByNumpy) {
  if (!have_numpy()) GTEST_SKIP() << "python3 with numpy is not available";
  ASSERT_EQ(run_python(dir_, "write.py", kNumpyWrites), 0);
  auto a = [](DType dt, auto f) { return pattern(dt, f); };
  auto q = [](double i) { return i * 0.25 - 1; };
  EXPECT_TRUE(load_npy(path("f4.npy")).equal(a(DType::Float32, q)));
  EXPECT_TRUE(load_npy(path("f8.npy")).equal(a(DType::Float64, [](double i) { return i / 3.0; })));
  EXPECT_TRUE(
      load_npy(path("f2.npy")).equal(a(DType::Float16, [](double i) { return i * 0.125 - 1; })));
  Tensor i8 = load_npy(path("i8.npy"));
  ASSERT_EQ(i8.dtype(), DType::Int64);
  for (int64_t i = 0; i < 24; ++i) EXPECT_EQ(i8.get_int(i), (i - 12) * 1000000000000LL);
  EXPECT_TRUE(load_npy(path("i4.npy")).equal(a(DType::Int32, [](double i) { return i * -7; })));
  EXPECT_TRUE(
      load_npy(path("i1.npy")).equal(a(DType::Int8, [](double i) { return i * 11 - 128; })));
  EXPECT_TRUE(load_npy(path("u1.npy")).equal(a(DType::UInt8, [](double i) { return i * 11; })));
  EXPECT_TRUE(load_npy(path("b1.npy")).equal(
      a(DType::Bool, [](double i) { return std::fmod(i, 3) == 0 ? 1.0 : 0.0; })));
  Tensor fo = load_npy(path("fortran.npy"));
  EXPECT_EQ(fo.strides(), (Shape{1, 2, 6}));
  EXPECT_TRUE(fo.equal(a(DType::Float32, [](double i) { return i * 0.5; })));
  EXPECT_TRUE(load_npy(path("big_f4.npy")).equal(a(DType::Float32, q)));
  EXPECT_TRUE(load_npy(path("big_i8.npy")).equal(i8));
  Tensor s = load_npy(path("scalar.npy"));
  EXPECT_EQ(s.dim(), 0);
  EXPECT_EQ(s.item(), 2.5);
  EXPECT_EQ(load_npy(path("empty.npy")).sizes(), (Shape{0, 3}));
  Tensor i2 = load_npy(path("i2.npy"));
  EXPECT_EQ(i2.dtype(), DType::Int16);
  EXPECT_EQ(i2.get_int(23), -23000);
  Tensor sf = load_npy(path("special_f4.npy"));
  EXPECT_TRUE(std::isnan(sf.get_double(0)));
  EXPECT_EQ(sf.get_double(1), std::numeric_limits<double>::infinity());
  EXPECT_EQ(sf.get_double(2), -std::numeric_limits<double>::infinity());
  EXPECT_TRUE(std::signbit(sf.get_double(3)));
  EXPECT_EQ(sf.data<float>()[4], std::numeric_limits<float>::denorm_min());
  Tensor sh = load_npy(path("special_f2.npy"));
  std::vector<uint16_t> hb;
  for (int i = 0; i < 5; ++i) hb.push_back(sh.data<Half>()[i].bits);
  EXPECT_EQ(hb, (std::vector<uint16_t>{0x7c00, 0x03ff, 0x0001, 0x7bff, 0x8000}));
  EXPECT_TRUE(load_npy(path("v2.npy")).equal(a(DType::Float64, [](double i) { return i * 2; })));
}

TEST_F(NpyTest, NumpyReadsFilesWrittenByStax) {
  if (!have_numpy()) GTEST_SKIP() << "python3 with numpy is not available";
  auto a = [](DType dt, auto f) { return pattern(dt, f); };
  save_npy(path("f4.npy"), a(DType::Float32, [](double i) { return i * 0.25 - 1; }));
  save_npy(path("f8.npy"), a(DType::Float64, [](double i) { return i / 3.0; }));
  save_npy(path("f2.npy"), a(DType::Float16, [](double i) { return i * 0.125 - 1; }));
  Tensor i8 = Tensor::empty({2, 3, 4}, DType::Int64);
  for (int64_t i = 0; i < 24; ++i) i8.set_int(i, (i - 12) * 1000000000000LL);
  save_npy(path("i8.npy"), i8);
  save_npy(path("i4.npy"), a(DType::Int32, [](double i) { return i * -7; }));
  save_npy(path("i1.npy"), a(DType::Int8, [](double i) { return i * 11 - 128; }));
  save_npy(path("u1.npy"), a(DType::UInt8, [](double i) { return i * 11; }));
  save_npy(path("b1.npy"), a(DType::Bool, [](double i) { return std::fmod(i, 3) == 0; }));
  save_npy(path("bf16.npy"), a(DType::BFloat16, [](double i) { return i * 0.5 - 3; }));
  Tensor m = Tensor::arange(6, DType::Int32);
  save_npy(path("transposed.npy"), m.as_strided({3, 2}, {1, 3}, 0));
  save_npy(path("scalar.npy"), Tensor::scalar(-0.75, DType::Float64));
  save_npy(path("empty.npy"), Tensor::zeros({2, 0}, DType::Int64));
  save_npy(path("rand.npy"), Tensor::rand({1000}, DType::Float32, 11));
  EXPECT_EQ(run_python(dir_, "read.py", kNumpyReads), 0);
}

}  // namespace
}  // namespace stax
