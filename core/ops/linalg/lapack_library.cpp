// Loading the LAPACK library and calling its Fortran routines (lapack.h). Why Debian's serial
// OpenBLAS, and why it is loaded with dlopen instead of linked: docs/linalg.md and DECISIONS.md.
#include "core/ops/linalg/lapack.h"

#include <dlfcn.h>

#include <algorithm>
#include <complex>
#include <cstdlib>
#include <type_traits>
#include <mutex>
#include <string>
#include <vector>

#include "core/support/error.h"

namespace stax::lapack {

namespace {

// The single-threaded OpenBLAS (its LAPACK included). Debian's generic liblapack.so.3 /
// libopenblas.so.0 are alternatives that resolve to the threaded build on most machines, whose
// pool would compete with cpu_cpp's and hangs under memory limits (docs/gemm.md): not taken.
std::vector<std::string> candidates() {
  std::vector<std::string> out;
  if (const char* env = std::getenv("STAX_LAPACK_LIBRARY"); env && *env) out.emplace_back(env);
  for (const char* dir : {"/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu",
                          "/usr/lib64", "/usr/lib"})
    out.push_back(std::string(dir) + "/openblas-serial/libopenblas.so.0");
  return out;
}

struct Library {
  void* handle = nullptr;
  std::string path;
  std::string tried;
};

Library& library() {
  static Library lib = [] {
    Library l;
    for (const std::string& p : candidates()) {
      void* h = dlopen(p.c_str(), RTLD_NOW | RTLD_LOCAL);
      if (h) {
        l.handle = h;
        l.path = p;
        return l;
      }
      const char* why = dlerror();
      l.tried += "\n  " + p + ": " + (why ? why : "not loadable");
    }
    return l;
  }();
  if (!lib.handle)
    throw Error("runtime", "linalg",
                "no LAPACK library could be loaded for the linear-algebra ops; tried:" +
                    lib.tried +
                    "\nInstall Debian's single-threaded OpenBLAS (`apt-get install "
                    "libopenblas0-serial`; scripts/setup.sh does) or set STAX_LAPACK_LIBRARY to a "
                    "single-threaded LAPACK library");
  return lib;
}

// OpenBLAS's serial build keeps per-process buffers without locks: one call at a time.
std::mutex& call_lock() {
  static std::mutex m;
  return m;
}

template <class Fn>
Fn symbol(const char* name) {
  void* p = dlsym(library().handle, name);
  if (!p)
    throw Error("runtime", "linalg",
                std::string("the LAPACK library ") + library().path + " has no routine " + name);
  return reinterpret_cast<Fn>(p);
}

// LAPACK's prefix of T's routines: s, d, c, z for float, double, complex<float>, complex<double>.
template <class T>
const char* prefix() {
  static_assert(std::is_same_v<T, float> || std::is_same_v<T, double> ||
                std::is_same_v<T, std::complex<float>> || std::is_same_v<T, std::complex<double>>);
  if constexpr (std::is_same_v<T, float>) return "s";
  else if constexpr (std::is_same_v<T, double>) return "d";
  else if constexpr (std::is_same_v<T, std::complex<float>>) return "c";
  else return "z";
}

// The routine prefix<T>() + base + "_", looked up once.
template <class T, class Fn>
Fn routine(const char* base) {
  std::string name = std::string(prefix<T>()) + base + "_";
  return symbol<Fn>(name.c_str());
}

void check_args(int info, const char* name) {
  if (info < 0)
    throw Error("runtime", "linalg",
                std::string("LAPACK's ") + name + " rejected argument " + std::to_string(-info) +
                    " (a bug in Stax's call)");
}

// gfortran's hidden lengths of character arguments are passed (as size_t, after the others):
// OpenBLAS's routines compiled from Fortran read them; the C ones ignore them.
using Len = size_t;

}  // namespace

std::string library_path() { return library().path; }

template <class T>
int getrf(int m, int n, T* a, int lda, int* ipiv) {
  using Fn = void (*)(const int*, const int*, T*, const int*, int*, int*);
  static Fn fn = routine<T, Fn>("getrf");
  int info = 0;
  std::lock_guard<std::mutex> lock(call_lock());
  fn(&m, &n, a, &lda, ipiv, &info);
  check_args(info, "getrf");
  return info;
}

template <class T>
int getrs(char trans, int n, int nrhs, const T* a, int lda, const int* ipiv, T* b, int ldb) {
  using Fn = void (*)(const char*, const int*, const int*, const T*, const int*, const int*, T*,
                      const int*, int*, Len);
  static Fn fn = routine<T, Fn>("getrs");
  int info = 0;
  std::lock_guard<std::mutex> lock(call_lock());
  fn(&trans, &n, &nrhs, a, &lda, ipiv, b, &ldb, &info, 1);
  check_args(info, "getrs");
  return info;
}

template <class T>
int potrf(char uplo, int n, T* a, int lda) {
  using Fn = void (*)(const char*, const int*, T*, const int*, int*, Len);
  static Fn fn = routine<T, Fn>("potrf");
  int info = 0;
  std::lock_guard<std::mutex> lock(call_lock());
  fn(&uplo, &n, a, &lda, &info, 1);
  check_args(info, "potrf");
  return info;
}

template <class T>
void trsm(char side, char uplo, char transa, char diag, int m, int n, const T* a, int lda, T* b,
          int ldb) {
  using Fn = void (*)(const char*, const char*, const char*, const char*, const int*, const int*,
                      const T*, const T*, const int*, T*, const int*, Len, Len, Len, Len);
  static Fn fn = routine<T, Fn>("trsm");
  const T one = 1;
  std::lock_guard<std::mutex> lock(call_lock());
  fn(&side, &uplo, &transa, &diag, &m, &n, &one, a, &lda, b, &ldb, 1, 1, 1, 1);
}

template <class T>
int geqrf(int m, int n, T* a, int lda, T* tau) {
  using Fn = void (*)(const int*, const int*, T*, const int*, T*, T*, const int*, int*);
  static Fn fn = routine<T, Fn>("geqrf");
  int info = 0, query = -1;
  T size = 0;
  std::lock_guard<std::mutex> lock(call_lock());
  fn(&m, &n, a, &lda, tau, &size, &query, &info);
  check_args(info, "geqrf");
  int lwork = std::max(1, static_cast<int>(size));
  std::vector<T> work(static_cast<size_t>(lwork));
  fn(&m, &n, a, &lda, tau, work.data(), &lwork, &info);
  check_args(info, "geqrf");
  return info;
}

template <class T>
int orgqr(int m, int n, int k, T* a, int lda, const T* tau) {
  using Fn = void (*)(const int*, const int*, const int*, T*, const int*, const T*, T*,
                      const int*, int*);
  static Fn fn = routine<T, Fn>("orgqr");
  int info = 0, query = -1;
  T size = 0;
  std::lock_guard<std::mutex> lock(call_lock());
  fn(&m, &n, &k, a, &lda, tau, &size, &query, &info);
  check_args(info, "orgqr");
  int lwork = std::max(1, static_cast<int>(size));
  std::vector<T> work(static_cast<size_t>(lwork));
  fn(&m, &n, &k, a, &lda, tau, work.data(), &lwork, &info);
  check_args(info, "orgqr");
  return info;
}

template <class T>
int ormqr(char side, char trans, int m, int n, int k, const T* a, int lda, const T* tau, T* c,
          int ldc) {
  using Fn = void (*)(const char*, const char*, const int*, const int*, const int*, const T*,
                      const int*, const T*, T*, const int*, T*, const int*, int*, Len, Len);
  static Fn fn = routine<T, Fn>("ormqr");
  int info = 0, query = -1;
  T size = 0;
  std::lock_guard<std::mutex> lock(call_lock());
  fn(&side, &trans, &m, &n, &k, a, &lda, tau, c, &ldc, &size, &query, &info, 1, 1);
  check_args(info, "ormqr");
  int lwork = std::max(1, static_cast<int>(size));
  std::vector<T> work(static_cast<size_t>(lwork));
  fn(&side, &trans, &m, &n, &k, a, &lda, tau, c, &ldc, work.data(), &lwork, &info, 1, 1);
  check_args(info, "ormqr");
  return info;
}

template <class T>
int syevd(char jobz, char uplo, int n, T* a, int lda, T* w) {
  using Fn = void (*)(const char*, const char*, const int*, T*, const int*, T*, T*, const int*,
                      int*, const int*, int*, Len, Len);
  static Fn fn = routine<T, Fn>("syevd");
  int info = 0, query = -1, isize = 0;
  T size = 0;
  std::lock_guard<std::mutex> lock(call_lock());
  fn(&jobz, &uplo, &n, a, &lda, w, &size, &query, &isize, &query, &info, 1, 1);
  check_args(info, "syevd");
  int lwork = std::max(1, static_cast<int>(size)), liwork = std::max(1, isize);
  std::vector<T> work(static_cast<size_t>(lwork));
  std::vector<int> iwork(static_cast<size_t>(liwork));
  fn(&jobz, &uplo, &n, a, &lda, w, work.data(), &lwork, iwork.data(), &liwork, &info, 1, 1);
  check_args(info, "syevd");
  return info;
}

template <class T>
int gesdd(char jobz, int m, int n, T* a, int lda, T* s, T* u, int ldu, T* vt, int ldvt) {
  using Fn = void (*)(const char*, const int*, const int*, T*, const int*, T*, T*, const int*,
                      T*, const int*, T*, const int*, int*, int*, Len);
  static Fn fn = routine<T, Fn>("gesdd");
  int info = 0, query = -1;
  T size = 0;
  std::vector<int> iwork(static_cast<size_t>(8 * std::max(1, std::min(m, n))));
  std::lock_guard<std::mutex> lock(call_lock());
  fn(&jobz, &m, &n, a, &lda, s, u, &ldu, vt, &ldvt, &size, &query, iwork.data(), &info, 1);
  check_args(info, "gesdd");
  int lwork = std::max(1, static_cast<int>(size));
  std::vector<T> work(static_cast<size_t>(lwork));
  fn(&jobz, &m, &n, a, &lda, s, u, &ldu, vt, &ldvt, work.data(), &lwork, iwork.data(), &info, 1);
  check_args(info, "gesdd");
  return info;
}

template <class T>
int geev(char jobvr, int n, T* a, int lda, T* wr, T* wi, T* vr, int ldvr) {
  using Fn = void (*)(const char*, const char*, const int*, T*, const int*, T*, T*, T*,
                      const int*, T*, const int*, T*, const int*, int*, Len, Len);
  static Fn fn = routine<T, Fn>("geev");
  const char jobvl = 'N';
  int info = 0, query = -1, ldvl = 1;
  T size = 0, vl = 0;
  std::lock_guard<std::mutex> lock(call_lock());
  fn(&jobvl, &jobvr, &n, a, &lda, wr, wi, &vl, &ldvl, vr, &ldvr, &size, &query, &info, 1, 1);
  check_args(info, "geev");
  int lwork = std::max(1, static_cast<int>(size));
  std::vector<T> work(static_cast<size_t>(lwork));
  fn(&jobvl, &jobvr, &n, a, &lda, wr, wi, &vl, &ldvl, vr, &ldvr, work.data(), &lwork, &info, 1, 1);
  check_args(info, "geev");
  return info;
}

template <class T>
int sytrf(char uplo, int n, T* a, int lda, int* ipiv) {
  using Fn = void (*)(const char*, const int*, T*, const int*, int*, T*, const int*, int*, Len);
  static Fn fn = routine<T, Fn>("sytrf");
  int info = 0, query = -1;
  T size = 0;
  std::lock_guard<std::mutex> lock(call_lock());
  fn(&uplo, &n, a, &lda, ipiv, &size, &query, &info, 1);
  check_args(info, "sytrf");
  int lwork = std::max(1, static_cast<int>(size));
  std::vector<T> work(static_cast<size_t>(lwork));
  fn(&uplo, &n, a, &lda, ipiv, work.data(), &lwork, &info, 1);
  check_args(info, "sytrf");
  return info;
}

template <class T>
int sytrs(char uplo, int n, int nrhs, const T* a, int lda, const int* ipiv, T* b, int ldb) {
  using Fn = void (*)(const char*, const int*, const int*, const T*, const int*, const int*, T*,
                      const int*, int*, Len);
  static Fn fn = routine<T, Fn>("sytrs");
  int info = 0;
  std::lock_guard<std::mutex> lock(call_lock());
  fn(&uplo, &n, &nrhs, a, &lda, ipiv, b, &ldb, &info, 1);
  check_args(info, "sytrs");
  return info;
}

template <class T>
int geev(char jobvr, int n, std::complex<T>* a, int lda, std::complex<T>* w, std::complex<T>* vr,
         int ldvr) {
  using C = std::complex<T>;
  using Fn = void (*)(const char*, const char*, const int*, C*, const int*, C*, C*, const int*,
                      C*, const int*, C*, const int*, T*, int*, Len, Len);
  static Fn fn = routine<C, Fn>("geev");
  const char jobvl = 'N';
  int info = 0, query = -1, ldvl = 1;
  C size = 0, vl = 0;
  std::vector<T> rwork(static_cast<size_t>(std::max(1, 2 * n)));
  std::lock_guard<std::mutex> lock(call_lock());
  fn(&jobvl, &jobvr, &n, a, &lda, w, &vl, &ldvl, vr, &ldvr, &size, &query, rwork.data(), &info, 1,
     1);
  check_args(info, "geev");
  int lwork = std::max(1, static_cast<int>(size.real()));
  std::vector<C> work(static_cast<size_t>(lwork));
  fn(&jobvl, &jobvr, &n, a, &lda, w, &vl, &ldvl, vr, &ldvr, work.data(), &lwork, rwork.data(),
     &info, 1, 1);
  check_args(info, "geev");
  return info;
}

#define STAX_LAPACK_INSTANTIATE(T)                                                            \
  template int getrf<T>(int, int, T*, int, int*);                                             \
  template int getrs<T>(char, int, int, const T*, int, const int*, T*, int);                  \
  template int potrf<T>(char, int, T*, int);                                                  \
  template void trsm<T>(char, char, char, char, int, int, const T*, int, T*, int);            \
  template int geqrf<T>(int, int, T*, int, T*);                                               \
  template int orgqr<T>(int, int, int, T*, int, const T*);                                    \
  template int ormqr<T>(char, char, int, int, int, const T*, int, const T*, T*, int);         \
  template int syevd<T>(char, char, int, T*, int, T*);                                        \
  template int gesdd<T>(char, int, int, T*, int, T*, T*, int, T*, int);                      \
  template int geev<T>(char, int, T*, int, T*, T*, T*, int);                                  \
  template int sytrf<T>(char, int, T*, int, int*);                                            \
  template int sytrs<T>(char, int, int, const T*, int, const int*, T*, int);
STAX_LAPACK_INSTANTIATE(float)
STAX_LAPACK_INSTANTIATE(double)
#undef STAX_LAPACK_INSTANTIATE

template int getrf<std::complex<float>>(int, int, std::complex<float>*, int, int*);
template int getrf<std::complex<double>>(int, int, std::complex<double>*, int, int*);
template int getrs<std::complex<float>>(char, int, int, const std::complex<float>*, int,
                                        const int*, std::complex<float>*, int);
template int getrs<std::complex<double>>(char, int, int, const std::complex<double>*, int,
                                         const int*, std::complex<double>*, int);
template int geev<float>(char, int, std::complex<float>*, int, std::complex<float>*,
                         std::complex<float>*, int);
template int geev<double>(char, int, std::complex<double>*, int, std::complex<double>*,
                          std::complex<double>*, int);

}  // namespace stax::lapack
