#include "bench/gemm_libraries.h"

#include <dlfcn.h>
#include <glob.h>

#include <algorithm>
#include <cstdlib>
#include <functional>
#include <map>

#include "plugins/cpu_cpp/thread_pool.h"
#include "stax/sdk/gemm.hpp"

namespace stax::bench {

namespace {

constexpr const char* kDebianLib = "/usr/lib/x86_64-linux-gnu/";

// The project's virtual environment (PyPI's wheels): $STAX_VENV, else <source>/.venv.
std::string venv() {
  if (const char* v = std::getenv("STAX_VENV")) return v;
  return std::string(STAX_SOURCE_DIR) + "/.venv";
}

std::string first_match(const std::string& pattern) {
  glob_t g{};
  std::string out;
  if (glob(pattern.c_str(), 0, nullptr, &g) == 0 && g.gl_pathc > 0) out = g.gl_pathv[0];
  globfree(&g);
  return out.empty() ? pattern : out;
}

void* open_library(const std::string& path, std::string* why) {
  void* h = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!h) *why = std::string("cannot load ") + path + ": " + dlerror();
  return h;
}

template <class F>
F symbol(void* h, const std::string& name) {
  return reinterpret_cast<F>(dlsym(h, name.c_str()));
}

// The pool's loop as stax::sdk::gemm wants it.
std::function<void(int64_t, const std::function<void(int64_t)>&)> loop_of(cpu::ThreadPool* pool) {
  if (!pool) return {};
  return [pool](int64_t tasks, const std::function<void(int64_t)>& task) {
    pool->parallel_for(tasks, task);
  };
}

// ---- Stax -----------------------------------------------------------------------------------

class StaxGemm : public GemmLibrary {
 public:
  // team: run the tasks on that OpenMP runtime's team (the torch backend's pool), not on Stax's
  // own threads.
  explicit StaxGemm(int threads, const cpu::OpenMpTeam* team = nullptr) {
    if (threads > 1)
      pool_ = team ? std::make_unique<cpu::ThreadPool>(threads, *team)
                   : std::make_unique<cpu::ThreadPool>(threads);
    ctx_.threads = threads;
    ctx_.parallel_for = loop_of(pool_.get());
    ctx_.workspace = &workspace_;
  }
  std::string describe() const override {
    std::string pool = pool_ && !pool_->team_path().empty() ? ", OpenMP team " + pool_->team_path() : "";
    return std::string("stax::sdk::gemm (") + sdk::gemm::instruction_set() + pool + ")";
  }
  std::string batch_mode() const override { return "one call"; }
  void multiply(const GemmShape& s, const float* a, const float* b, float* c) override {
    sdk::gemm::Problem<float> p;
    p.batch = s.batch;
    p.m = s.m;
    p.n = s.n;
    p.k = s.k;
    p.a = a;
    p.a_rs = s.a_transposed ? 1 : s.k;
    p.a_cs = s.a_transposed ? s.m : 1;
    p.a_bs = s.m * s.k;
    p.b = b;
    p.b_rs = s.b_transposed ? 1 : s.n;
    p.b_cs = s.b_transposed ? s.k : 1;
    p.b_bs = s.k * s.n;
    p.c = c;
    p.c_rs = s.n;
    p.c_cs = 1;
    p.c_bs = s.m * s.n;
    sdk::gemm::multiply(p, ctx_);
  }

 private:
  std::unique_ptr<cpu::ThreadPool> pool_;
  sdk::gemm::Workspace workspace_;
  sdk::gemm::Context ctx_;
};

// ---- CBLAS libraries ------------------------------------------------------------------------

enum { kRowMajor = 101, kNoTrans = 111, kTrans = 112 };
using SgemmFn = void (*)(int, int, int, int, int, int, float, const float*, int, const float*, int,
                         float, float*, int);
using SgemmBatchStridedFn = void (*)(int, int, int, int, int, int, float, const float*, int, int,
                                     const float*, int, int, float, float*, int, int, int);

class CblasGemm : public GemmLibrary {
 public:
  // `prefix` precedes every symbol (scipy-openblas32: "scipy_"). With a pool, each task calls
  // the (serial) library on a block of rows, or on batch entries.
  CblasGemm(void* handle, std::string path, std::string prefix, int threads, bool in_pool)
      : handle_(handle), path_(std::move(path)), prefix_(std::move(prefix)) {
    sgemm_ = symbol<SgemmFn>(handle_, prefix_ + "cblas_sgemm");
    batch_ = symbol<SgemmBatchStridedFn>(handle_, prefix_ + "cblas_sgemm_batch_strided");
    if (in_pool) {
      batch_ = nullptr;  // the pool spreads the entries
      if (threads > 1) pool_ = std::make_unique<cpu::ThreadPool>(threads);
      threads = 1;
    }
    set_threads(threads);
  }
  bool ok() const { return sgemm_ != nullptr; }
  std::string describe() const override {
    using ConfigFn = const char* (*)();
    if (auto f = symbol<ConfigFn>(handle_, prefix_ + "openblas_get_config")) return f();
    if (auto f = symbol<ConfigFn>(handle_, "bli_info_get_version_str"))
      return std::string("BLIS ") + f();
    using MklVersionFn = void (*)(char*, int);
    if (auto f = symbol<MklVersionFn>(handle_, "MKL_Get_Version_String")) {
      char buf[256] = {0};
      f(buf, sizeof buf - 1);
      return buf;
    }
    return path_;
  }
  std::string batch_mode() const override {
    if (batch_) return "one call (cblas_sgemm_batch_strided)";
    return pool_ ? "entries over Stax's pool" : "loop of calls";
  }
  void multiply(const GemmShape& s, const float* a, const float* b, float* c) override {
    const int m = static_cast<int>(s.m), n = static_cast<int>(s.n), k = static_cast<int>(s.k);
    const int tb = s.b_transposed ? kTrans : kNoTrans, ldb = s.b_transposed ? k : n;
    const int ta = s.a_transposed ? kTrans : kNoTrans, lda = s.a_transposed ? m : k;
    if (s.batch > 1 && batch_)
      return batch_(kRowMajor, ta, tb, m, n, k, 1.0f, a, lda, m * k, b, ldb, k * n, 0.0f, c, n,
                    m * n, static_cast<int>(s.batch));
    auto rows = [&](int64_t e, int64_t r0, int64_t r1) {
      sgemm_(kRowMajor, ta, tb, static_cast<int>(r1 - r0), n, k, 1.0f,
             a + e * s.m * s.k + r0 * (s.a_transposed ? 1 : s.k), lda, b + e * s.k * s.n, ldb,
             0.0f, c + e * s.m * s.n + r0 * s.n, n);
    };
    if (!pool_) {
      for (int64_t e = 0; e < s.batch; ++e) rows(e, 0, s.m);
      return;
    }
    if (s.batch > 1) return pool_->parallel_for(s.batch, [&](int64_t e) { rows(e, 0, s.m); });
    const int64_t tasks = std::min<int64_t>(s.m, 2 * pool_->threads());
    pool_->parallel_for(tasks, [&](int64_t t) { rows(0, s.m * t / tasks, s.m * (t + 1) / tasks); });
  }

 private:
  void set_threads(int threads) {
    using SetFn = void (*)(int);
    for (const char* name : {"openblas_set_num_threads", "bli_thread_set_num_threads",
                             "MKL_Set_Num_Threads"})
      if (auto f = symbol<SetFn>(handle_, prefix_ + name)) return f(threads);
  }

  void* handle_;
  std::string path_, prefix_;
  SgemmFn sgemm_ = nullptr;
  SgemmBatchStridedFn batch_ = nullptr;
  std::unique_ptr<cpu::ThreadPool> pool_;
};

// ---- oneDNN ------------------------------------------------------------------------------------

// The subset of oneDNN's C API used here (the same for 2.x and 3.x where both exist; the matmul
// functions are 3.x's: opaque memory descriptors).
using DnnlSgemmFn = int (*)(char, char, int64_t, int64_t, int64_t, float, const float*, int64_t,
                            const float*, int64_t, float, float*, int64_t);
struct DnnlVersion {
  int major, minor, patch;
  const char* hash;
  unsigned cpu_runtime, gpu_runtime;
};
struct DnnlExecArg {
  int arg;
  void* memory;
};
enum { kDnnlCpu = 1, kDnnlF32 = 3, kDnnlStreamInOrder = 1, kArgSrc = 1, kArgDst = 17,
       kArgWeights = 33 };

class OneDnnGemm : public GemmLibrary {
 public:
  OneDnnGemm(void* handle, int threads) : handle_(handle) {
    sgemm_ = symbol<DnnlSgemmFn>(handle_, "dnnl_sgemm");
    using SetFn = void (*)(int);
    // 2.6 (Debian) runs on OpenMP; 3.x (PyPI) on TBB, limited by the affinity mask.
    if (auto f = symbol<SetFn>(handle_, "omp_set_num_threads")) f(threads);
    using VersionFn = const DnnlVersion* (*)();
    if (auto f = symbol<VersionFn>(handle_, "dnnl_version")) version_ = *f();
    if (version_.major >= 3) set_up_matmul();
  }
  bool ok() const { return sgemm_ != nullptr; }
  std::string describe() const override {
    return "oneDNN " + std::to_string(version_.major) + "." + std::to_string(version_.minor) +
           "." + std::to_string(version_.patch);
  }
  std::string batch_mode() const override {
    return matmul_create_ ? "one call (batched matmul primitive)" : "loop of calls";
  }
  void multiply(const GemmShape& s, const float* a, const float* b, float* c) override {
    if (s.batch > 1 && matmul_create_) return batched(s, a, b, c);
    const char tb = s.b_transposed ? 'T' : 'N', ta = s.a_transposed ? 'T' : 'N';
    for (int64_t e = 0; e < s.batch; ++e)
      sgemm_(ta, tb, s.m, s.n, s.k, 1.0f, a + e * s.m * s.k, s.a_transposed ? s.m : s.k,
             b + e * s.k * s.n,
             s.b_transposed ? s.k : s.n, 0.0f, c + e * s.m * s.n, s.n);
  }

 private:
  using EngineCreate = int (*)(void**, int, size_t);
  using StreamCreate = int (*)(void**, void*, unsigned);
  using MdCreate = int (*)(void**, int, const int64_t*, int, const int64_t*);
  using MatmulCreate = int (*)(void**, void*, const void*, const void*, const void*, const void*,
                               const void*);
  using PrimCreate = int (*)(void**, const void*);
  using MemCreate = int (*)(void**, const void*, void*, void*);
  using MemSetHandle = int (*)(void*, void*);
  using Execute = int (*)(const void*, void*, int, const DnnlExecArg*);
  using Wait = int (*)(void*);

  void set_up_matmul() {
    matmul_create_ = symbol<MatmulCreate>(handle_, "dnnl_matmul_primitive_desc_create");
    auto engine_create = symbol<EngineCreate>(handle_, "dnnl_engine_create");
    auto stream_create = symbol<StreamCreate>(handle_, "dnnl_stream_create");
    if (!matmul_create_ || !engine_create || !stream_create ||
        engine_create(&engine_, kDnnlCpu, 0) != 0 ||
        stream_create(&stream_, engine_, kDnnlStreamInOrder) != 0)
      matmul_create_ = nullptr;
  }

  struct Matmul {
    void* primitive = nullptr;
    void *src = nullptr, *weights = nullptr, *dst = nullptr;
  };

  void batched(const GemmShape& s, const float* a, const float* b, float* c) {
    Matmul& mm = matmuls_[s.name];
    if (!mm.primitive) {
      auto md_create = symbol<MdCreate>(handle_, "dnnl_memory_desc_create_with_strides");
      auto prim_create = symbol<PrimCreate>(handle_, "dnnl_primitive_create");
      auto mem_create = symbol<MemCreate>(handle_, "dnnl_memory_create");
      const int64_t src_dims[3] = {s.batch, s.m, s.k};
      const int64_t src_strides[3] = {s.m * s.k, s.a_transposed ? 1 : s.k, s.a_transposed ? s.m : 1};
      const int64_t w_dims[3] = {s.batch, s.k, s.n};
      const int64_t w_strides[3] = {s.k * s.n, s.b_transposed ? 1 : s.n, s.b_transposed ? s.k : 1};
      const int64_t d_dims[3] = {s.batch, s.m, s.n}, d_strides[3] = {s.m * s.n, s.n, 1};
      void *src_md = nullptr, *w_md = nullptr, *d_md = nullptr, *pd = nullptr;
      md_create(&src_md, 3, src_dims, kDnnlF32, src_strides);
      md_create(&w_md, 3, w_dims, kDnnlF32, w_strides);
      md_create(&d_md, 3, d_dims, kDnnlF32, d_strides);
      matmul_create_(&pd, engine_, src_md, w_md, nullptr, d_md, nullptr);
      prim_create(&mm.primitive, pd);
      mem_create(&mm.src, src_md, engine_, const_cast<float*>(a));
      mem_create(&mm.weights, w_md, engine_, const_cast<float*>(b));
      mem_create(&mm.dst, d_md, engine_, c);
    }
    auto set = symbol<MemSetHandle>(handle_, "dnnl_memory_set_data_handle");
    set(mm.src, const_cast<float*>(a));
    set(mm.weights, const_cast<float*>(b));
    set(mm.dst, c);
    const DnnlExecArg args[3] = {{kArgSrc, mm.src}, {kArgWeights, mm.weights}, {kArgDst, mm.dst}};
    symbol<Execute>(handle_, "dnnl_primitive_execute")(mm.primitive, stream_, 3, args);
    symbol<Wait>(handle_, "dnnl_stream_wait")(stream_);
  }

  void* handle_;
  DnnlSgemmFn sgemm_ = nullptr;
  DnnlVersion version_{0, 0, 0, "", 0, 0};
  MatmulCreate matmul_create_ = nullptr;
  void* engine_ = nullptr;
  void* stream_ = nullptr;
  std::map<std::string, Matmul> matmuls_;
};

}  // namespace

const std::vector<std::string>& gemm_library_names() {
  static const std::vector<std::string> names = {"stax", "stax-gomp", "openblas", "openblas-serial",
                                                 "openblas-pypi", "blis", "mkl",
                                                 "onednn-debian", "onednn-pypi"};
  return names;
}

std::unique_ptr<GemmLibrary> load_gemm_library(const std::string& name, int threads,
                                               std::string* why) {
  const std::string lib = kDebianLib;
  if (name == "stax") return std::make_unique<StaxGemm>(threads);
  if (name == "stax-gomp") {  // as the torch backend runs it: on torch's libgomp team
    const std::string path = lib + "libgomp.so.1";
    if (!open_library(path, why)) return nullptr;  // loaded after the pinning: its team fits it
    cpu::OpenMpTeam team = cpu::OpenMpTeam::find(path);
    return std::make_unique<StaxGemm>(threads, &team);
  }
  struct Cblas {
    const char* name;
    std::string path, prefix;
    bool in_pool;
  };
  const Cblas cblas[] = {
      {"openblas", lib + "openblas-pthread/libopenblas.so.0", "", false},
      {"openblas-serial", lib + "openblas-serial/libopenblas.so.0", "", true},
      {"openblas-pypi",
       first_match(venv() + "/lib/python3*/site-packages/scipy_openblas32/lib/libscipy_openblas.so"),
       "scipy_", false},
      {"blis", lib + "blis-pthread/libblis.so.4", "", false},
      {"mkl", venv() + "/lib/libmkl_rt.so.3", "", false}};
  for (const Cblas& c : cblas) {
    if (name != c.name) continue;
    void* h = open_library(c.path, why);
    if (!h) return nullptr;
    auto g = std::make_unique<CblasGemm>(h, c.path, c.prefix, threads, c.in_pool);
    if (!g->ok()) {
      *why = c.path + " has no " + c.prefix + "cblas_sgemm";
      return nullptr;
    }
    return g;
  }
  if (name == "onednn-debian" || name == "onednn-pypi") {
    std::string path = name == "onednn-debian" ? lib + "libdnnl.so.2" : venv() + "/lib/libdnnl.so.3";
    void* h = open_library(path, why);
    if (!h) {
      if (name == "onednn-pypi") *why += " (PyPI's onednn needs LD_LIBRARY_PATH=" + venv() + "/lib)";
      return nullptr;
    }
    auto g = std::make_unique<OneDnnGemm>(h, threads);
    if (!g->ok()) {
      *why = path + " has no dnnl_sgemm";
      return nullptr;
    }
    return g;
  }
  *why = "unknown library '" + name + "'";
  return nullptr;
}

}  // namespace stax::bench
