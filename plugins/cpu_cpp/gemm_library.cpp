#include "plugins/cpu_cpp/gemm_library.h"

#include <dlfcn.h>

#include <algorithm>
#include <climits>
#include <cstdlib>
#include <functional>
#include <type_traits>

#include "stax/sdk/types.hpp"

namespace stax::cpu {

namespace {

using sdk::gemm::Problem;
using sdk::gemm::RowsDone;

#if defined(__x86_64__)
constexpr const char* kMultiarchLib = "/usr/lib/x86_64-linux-gnu/";
#elif defined(__aarch64__)
constexpr const char* kMultiarchLib = "/usr/lib/aarch64-linux-gnu/";
#else
constexpr const char* kMultiarchLib = "/usr/lib/";
#endif

// The first of `files` that loads (RTLD_LOCAL: the libraries' symbols clash with each other),
// or nullptr with *why listing what was tried.
void* open_first(const std::vector<std::string>& files, std::string* why) {
  std::string tried;
  for (const std::string& f : files) {
    if (f.empty()) continue;
    if (void* h = dlopen(f.c_str(), RTLD_NOW | RTLD_LOCAL)) return h;
    const char* err = dlerror();
    tried += "\n  " + f + ": " + (err ? err : "cannot be loaded");
  }
  *why = "could not load any of:" + tried;
  return nullptr;
}

// $VAR/lib/<file>, or "" when VAR is unset (virtual environments and conda hold PyPI's wheels).
std::string env_lib(const char* var, const std::string& file) {
  const char* v = std::getenv(var);
  return v && *v ? std::string(v) + "/lib/" + file : std::string();
}

template <class F>
F symbol(void* h, const char* name) {
  return reinterpret_cast<F>(dlsym(h, name));
}

// ---- the pool's blocks -----------------------------------------------------------------------

// Below this many multiply-adds a product runs on the calling thread.
constexpr int64_t kParallelMinTerms = int64_t{1} << 18;

// Calls block(e, r0, r1) over row blocks that cover every entry, spread over the pool: a batch
// of at least 2 entries per thread by entry, otherwise each entry in about 2 blocks per thread.
void for_blocks(int64_t batch, int64_t m, int64_t terms, ThreadPool* pool,
                const std::function<void(int64_t, int64_t, int64_t)>& block) {
  const int64_t threads = pool ? pool->threads() : 1;
  if (threads <= 1 || terms * batch < kParallelMinTerms) {
    for (int64_t e = 0; e < batch; ++e) block(e, 0, m);
    return;
  }
  sdk::gemm::detail::FirstError error;
  if (batch >= 2 * threads) {
    pool->parallel_for(batch, [&](int64_t e) { error.run([&] { block(e, 0, m); }); });
    return error.rethrow();
  }
  const int64_t per_entry = std::clamp<int64_t>(2 * threads / batch, 1, m);
  pool->parallel_for(batch * per_entry, [&](int64_t t) {
    const int64_t e = t / per_entry, b = t % per_entry;
    error.run([&] { block(e, m * b / per_entry, m * (b + 1) / per_entry); });
  });
  error.rethrow();
}

// ---- one block through a row-major BLAS interface ----------------------------------------------

// How a row-major BLAS reads a strided matrix in place (trans: as its transpose), if it can.
struct View {
  bool ok = false, trans = false;
  int64_t ld = 1;
};

View view_of(int64_t rows, int64_t cols, int64_t rs, int64_t cs) {
  View v;
  if ((cs == 1 || cols <= 1) && (rows <= 1 || rs >= std::max<int64_t>(1, cols))) {
    v.ok = true;
    v.ld = rows <= 1 ? std::max<int64_t>(1, cols) : rs;
  } else if ((rs == 1 || rows <= 1) && (cols <= 1 || cs >= std::max<int64_t>(1, rows))) {
    v.ok = v.trans = true;
    v.ld = cols <= 1 ? std::max<int64_t>(1, rows) : cs;
  }
  return v;
}

// Row-major C (ldc) = op(A) @ op(B) by the library: (trans_a, trans_b, m, n, k, a, lda, b, ldb,
// c, ldc).
template <class T>
using RowMajorGemm = std::function<void(bool, bool, int64_t, int64_t, int64_t, const T*, int64_t,
                                        const T*, int64_t, T*, int64_t)>;

// Rows [r0, r1) of entry e of p: operands read in place when the library can, else gathered
// into row-major copies; C written in place when row-major, else through a copy.
template <class T>
void block_product(const Problem<T>& p, int64_t e, int64_t r0, int64_t r1,
                   const RowMajorGemm<T>& gemm) {
  const int64_t m = r1 - r0, n = p.n, k = p.k;
  if (m <= 0 || n <= 0) return;
  const T* a = p.a + p.a_offset(e) + r0 * p.a_rs;
  const T* b = p.b + p.b_offset(e);
  T* c = p.c + p.c_offset(e) + r0 * p.c_rs;
  const bool c_direct = (p.c_cs == 1 || n <= 1) && (m <= 1 || p.c_rs >= n);
  std::vector<T> c_copy;
  T* cp = c;
  int64_t ldc = m <= 1 ? n : p.c_rs;
  if (!c_direct) {
    c_copy.assign(static_cast<size_t>(m * n), T(0));
    cp = c_copy.data();
    ldc = n;
  }
  if (k == 0) {
    for (int64_t i = 0; i < m; ++i) std::fill(cp + i * ldc, cp + i * ldc + n, T(0));
  } else {
    std::vector<T> a_copy, b_copy;
    View av = view_of(m, k, p.a_rs, p.a_cs), bv = view_of(k, n, p.b_rs, p.b_cs);
    auto gather = [](const T* src, int64_t rows, int64_t cols, int64_t rs, int64_t cs,
                     std::vector<T>& dst) {
      dst.resize(static_cast<size_t>(rows * cols));
      for (int64_t i = 0; i < rows; ++i)
        for (int64_t j = 0; j < cols; ++j) dst[i * cols + j] = src[i * rs + j * cs];
    };
    if (!av.ok) {
      gather(a, m, k, p.a_rs, p.a_cs, a_copy);
      a = a_copy.data();
      av = view_of(m, k, k, 1);
    }
    if (!bv.ok) {
      gather(b, k, n, p.b_rs, p.b_cs, b_copy);
      b = b_copy.data();
      bv = view_of(k, n, n, 1);
    }
    gemm(av.trans, bv.trans, m, n, k, a, av.ld, b, bv.ld, cp, ldc);
  }
  if (cp != c)
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) c[i * p.c_rs + j * p.c_cs] = cp[i * ldc + j];
}

template <class T>
void run_blocks(const Problem<T>& p, ThreadPool* pool, const RowsDone& done,
                const RowMajorGemm<T>& gemm) {
  if (p.batch <= 0 || p.m <= 0 || p.n <= 0) return;
  for_blocks(p.batch, p.m, p.m * p.n * std::max<int64_t>(p.k, 1), pool,
             [&](int64_t e, int64_t r0, int64_t r1) {
               block_product(p, e, r0, r1, gemm);
               if (done) done(e, r0, r1);
             });
}

// ---- the libraries -----------------------------------------------------------------------------

class StaxGemm : public GemmLibrary {
 public:
  StaxGemm(std::shared_ptr<ThreadPool> pool, int threads) : pool_(std::move(pool)) {
    ctx_.threads = pool_ ? threads : 1;
    ThreadPool* raw = pool_.get();
    if (raw)
      ctx_.parallel_for = [raw](int64_t tasks, const std::function<void(int64_t)>& task) {
        raw->parallel_for(tasks, task);
      };
    ctx_.workspace = &workspace_;
  }
  std::string describe() const override {
    return std::string("stax GEMM (") + sdk::gemm::instruction_set() + ")";
  }
  void multiply(const Problem<float>& p, const RowsDone& done) override { run(p, done); }
  void multiply(const Problem<double>& p, const RowsDone& done) override { run(p, done); }

 private:
  // The plan follows the pool's width at this call, not the width at construction: on an OpenMP
  // team (the torch backend's pool "torch") it is torch.set_num_threads()'s, which may change
  // between calls; a 1-wide team gets the 1-thread plan (row blocks for one thread, no parallel
  // region opened), not the blocks of the configured width run one after another (issue 25;
  // docs/gemm.md "Threads"). The bits do not depend on it: K is blocked the same for any width.
  template <class T>
  void run(const Problem<T>& p, const RowsDone& done) {
    if (!pool_) return sdk::gemm::multiply(p, ctx_, done);
    sdk::gemm::Context ctx = ctx_;  // per call: concurrent callers may see different widths
    ctx.threads = std::min(pool_->threads(), ctx_.threads);
    sdk::gemm::multiply(p, ctx, done);
  }

  std::shared_ptr<ThreadPool> pool_;
  sdk::gemm::Workspace workspace_;
  sdk::gemm::Context ctx_;
};

// A CBLAS library (OpenBLAS, BLIS, MKL): cblas_sgemm / cblas_dgemm on each block.
class CblasGemm : public GemmLibrary {
 public:
  using Sgemm = void (*)(int, int, int, int, int, int, float, const float*, int, const float*, int,
                         float, float*, int);
  using Dgemm = void (*)(int, int, int, int, int, int, double, const double*, int, const double*,
                         int, double, double*, int);
  CblasGemm(void* handle, std::string description, std::shared_ptr<ThreadPool> pool)
      : description_(std::move(description)), pool_(std::move(pool)) {
    sgemm_ = symbol<Sgemm>(handle, "cblas_sgemm");
    dgemm_ = symbol<Dgemm>(handle, "cblas_dgemm");
  }
  bool ok() const { return sgemm_ && dgemm_; }
  std::string describe() const override { return description_; }
  void multiply(const Problem<float>& p, const RowsDone& done) override {
    run_blocks<float>(p, pool_.get(), done, call<float>(sgemm_));
  }
  void multiply(const Problem<double>& p, const RowsDone& done) override {
    run_blocks<double>(p, pool_.get(), done, call<double>(dgemm_));
  }

 private:
  template <class T, class Fn>
  static RowMajorGemm<T> call(Fn fn) {
    return [fn](bool ta, bool tb, int64_t m, int64_t n, int64_t k, const T* a, int64_t lda,
                const T* b, int64_t ldb, T* c, int64_t ldc) {
      for (int64_t v : {m, n, k, lda, ldb, ldc})
        if (v > INT_MAX)
          throw sdk::PluginError(STAX_ERROR_UNSUPPORTED,
                                 "cpu_cpp: a matrix dimension of " + std::to_string(v) +
                                     " exceeds the 32-bit BLAS interface (blas: stax has none)");
      enum { kRowMajor = 101, kNoTrans = 111, kTrans = 112 };
      fn(kRowMajor, ta ? kTrans : kNoTrans, tb ? kTrans : kNoTrans, int(m), int(n), int(k), T(1),
         a, int(lda), b, int(ldb), T(0), c, int(ldc));
    };
  }

  std::string description_;
  std::shared_ptr<ThreadPool> pool_;
  Sgemm sgemm_ = nullptr;
  Dgemm dgemm_ = nullptr;
};

// oneDNN: dnnl_sgemm on each block with one OpenMP thread; float64 through Stax's GEMM.
class OneDnnGemm : public GemmLibrary {
 public:
  using Sgemm = int (*)(char, char, int64_t, int64_t, int64_t, float, const float*, int64_t,
                        const float*, int64_t, float, float*, int64_t);
  OneDnnGemm(void* handle, std::shared_ptr<ThreadPool> pool, int threads)
      : pool_(pool), fallback_(pool, threads) {
    sgemm_ = symbol<Sgemm>(handle, "dnnl_sgemm");
    omp_set_ = symbol<void (*)(int)>(handle, "omp_set_num_threads");
    struct Version {
      int major, minor, patch;
    };
    if (auto v = symbol<const Version* (*)()>(handle, "dnnl_version")) {
      const Version* ver = v();
      version_ = std::to_string(ver->major) + "." + std::to_string(ver->minor) + "." +
                 std::to_string(ver->patch);
    }
  }
  bool ok() const { return sgemm_ != nullptr; }
  std::string describe() const override { return "oneDNN " + version_ + " (dnnl_sgemm)"; }
  void multiply(const Problem<float>& p, const RowsDone& done) override {
    run_blocks<float>(p, pool_.get(), done,
                      [this](bool ta, bool tb, int64_t m, int64_t n, int64_t k, const float* a,
                             int64_t lda, const float* b, int64_t ldb, float* c, int64_t ldc) {
                        if (omp_set_) omp_set_(1);  // this thread's OpenMP teams: itself alone
                        int status = sgemm_(ta ? 'T' : 'N', tb ? 'T' : 'N', m, n, k, 1.0f, a, lda,
                                            b, ldb, 0.0f, c, ldc);
                        if (status != 0)
                          throw sdk::PluginError(STAX_ERROR_RUNTIME,
                                                 "cpu_cpp: dnnl_sgemm failed with status " +
                                                     std::to_string(status));
                      });
  }
  void multiply(const Problem<double>& p, const RowsDone& done) override {
    fallback_.multiply(p, done);
  }

 private:
  std::shared_ptr<ThreadPool> pool_;
  StaxGemm fallback_;
  Sgemm sgemm_ = nullptr;
  void (*omp_set_)(int) = nullptr;
  std::string version_ = "?";
};

std::string openblas_describe(void* h) {
  if (auto f = symbol<const char* (*)()>(h, "openblas_get_config")) return f();
  return "OpenBLAS";
}

}  // namespace

const std::vector<std::string>& gemm_library_names() {
  static const std::vector<std::string> names = {"stax", "openblas", "blis", "mkl", "onednn"};
  return names;
}

std::unique_ptr<GemmLibrary> load_gemm_library(const std::string& name, const std::string& file,
                                               std::shared_ptr<ThreadPool> pool, int threads,
                                               std::string* why) {
  const std::string lib = kMultiarchLib;
  auto files = [&](std::vector<std::string> usual) {
    return file.empty() ? usual : std::vector<std::string>{file};
  };
  if (name == "stax") return std::make_unique<StaxGemm>(std::move(pool), threads);
  if (name == "openblas") {
    void* h = open_first(files({lib + "openblas-serial/libopenblas.so.0"}), why);
    if (!h) {
      *why += "\n(Debian: apt-get install libopenblas0-serial; the threaded build would start "
              "a thread pool of its own)";
      return nullptr;
    }
    // A threaded build starts its own pool when loaded: refused (one pool; issue 28 item 6).
    auto parallel = symbol<int (*)()>(h, "openblas_get_parallel");
    if (parallel && parallel() != 0) {
      *why = "'" + (file.empty() ? std::string("libopenblas") : file) +
             "' is a threaded OpenBLAS build (openblas_get_parallel() = " +
             std::to_string(parallel()) + "): cpu_cpp runs a serial one on its own thread pool";
      return nullptr;
    }
    auto g = std::make_unique<CblasGemm>(h, openblas_describe(h), std::move(pool));
    if (g->ok()) return g;
  } else if (name == "blis") {
    void* h = open_first(files({lib + "blis-serial/libblis.so.4", "libblis.so.4"}), why);
    if (!h) {
      *why += "\n(Debian: apt-get install libblis4-serial)";
      return nullptr;
    }
    if (auto set = symbol<void (*)(long)>(h, "bli_thread_set_num_threads")) set(1);
    std::string version = "BLIS";
    if (auto v = symbol<const char* (*)()>(h, "bli_info_get_version_str"))
      version += std::string(" ") + v();
    auto g = std::make_unique<CblasGemm>(h, version, std::move(pool));
    if (g->ok()) return g;
  } else if (name == "mkl") {
    void* h = open_first(files({"libmkl_rt.so.3", "libmkl_rt.so.2", env_lib("VIRTUAL_ENV", "libmkl_rt.so.3"),
                                env_lib("CONDA_PREFIX", "libmkl_rt.so.3")}),
                         why);
    if (!h) {
      *why += "\n(PyPI: pip install mkl, then put its lib directory on LD_LIBRARY_PATH or name "
              "the file with blas_library)";
      return nullptr;
    }
    // Before any other MKL call: the sequential layer (no OpenMP / TBB pool of MKL's own).
    constexpr int kMklThreadingSequential = 1;
    if (auto layer = symbol<int (*)(int)>(h, "MKL_Set_Threading_Layer"))
      layer(kMklThreadingSequential);
    std::string version = "MKL";
    if (auto v = symbol<void (*)(char*, int)>(h, "MKL_Get_Version_String")) {
      char buf[200] = {0};
      v(buf, sizeof buf - 1);
      version = buf;
    }
    auto g = std::make_unique<CblasGemm>(h, version, std::move(pool));
    if (g->ok()) return g;
  } else if (name == "onednn") {
    void* h = open_first(files({"libdnnl.so.2", "libdnnl.so.3", env_lib("VIRTUAL_ENV", "libdnnl.so.3")}),
                         why);
    if (!h) {
      *why += "\n(Debian: apt-get install libdnnl2)";
      return nullptr;
    }
    auto g = std::make_unique<OneDnnGemm>(h, std::move(pool), threads);
    if (g->ok()) return g;
  } else {
    *why = "unknown GEMM library '" + name + "'";
    return nullptr;
  }
  *why = "the library for '" + name + "' lacks the GEMM entry points (cblas_sgemm / cblas_dgemm / "
         "dnnl_sgemm)";
  return nullptr;
}

}  // namespace stax::cpu
