// The LAPACK (and the few BLAS) routines behind the linear-algebra ops (docs/linalg.md), typed for
// float and double. The library is Debian's single-threaded OpenBLAS (libopenblas0-serial: its
// LAPACK and BLAS in one file), loaded the first time a linalg kernel runs, so programs without
// linalg ops never map it (and no BLAS thread pool is ever started). Matrices are column-major
// with leading dimension `ld*`, as LAPACK takes them. Each routine returns LAPACK's `info`
// (0: success, < 0: a bad argument, which is a bug here and throws, > 0: the routine's own
// meaning: a singular U, a matrix that is not positive definite, no convergence).
#pragma once

#include <complex>
#include <string>

namespace stax::lapack {

// getrf and getrs also take std::complex<float> / std::complex<double> (cgetrf / zgetrf ...).
template <class T> int getrf(int m, int n, T* a, int lda, int* ipiv);
// trans 'N' solves A X = B, 'T' A^T X = B ('C' A^H X = B for complex T), with A's LU factors from
// getrf.
template <class T> int getrs(char trans, int n, int nrhs, const T* a, int lda, const int* ipiv,
                             T* b, int ldb);
template <class T> int potrf(char uplo, int n, T* a, int lda);
// BLAS trsm: B := op(A)^-1 B (side 'L') or B op(A)^-1 (side 'R'), A triangular.
template <class T> void trsm(char side, char uplo, char transa, char diag, int m, int n,
                             const T* a, int lda, T* b, int ldb);
template <class T> int geqrf(int m, int n, T* a, int lda, T* tau);
template <class T> int orgqr(int m, int n, int k, T* a, int lda, const T* tau);
template <class T> int ormqr(char side, char trans, int m, int n, int k, const T* a, int lda,
                             const T* tau, T* c, int ldc);
// jobz 'N' eigenvalues only, 'V' with eigenvectors (into a).
template <class T> int syevd(char jobz, char uplo, int n, T* a, int lda, T* w);
// jobz 'N' (singular values only), 'S' (reduced U, Vt) or 'A' (full).
template <class T> int gesdd(char jobz, int m, int n, T* a, int lda, T* s, T* u, int ldu, T* vt,
                             int ldvt);

// The eigenvalues (wr + i wi) of a general matrix and, with jobvr 'V', its right eigenvectors
// (LAPACK's packing: a complex pair's vectors as vr[:, j] ± i vr[:, j+1]); a is overwritten.
template <class T> int geev(char jobvr, int n, T* a, int lda, T* wr, T* wi, T* vr, int ldvr);
// The same of a complex matrix (cgeev / zgeev): eigenvalues w, right eigenvectors as the columns
// of vr (each of unit norm with its largest component real); a is overwritten.
template <class T> int geev(char jobvr, int n, std::complex<T>* a, int lda, std::complex<T>* w,
                            std::complex<T>* vr, int ldvr);

// Bunch-Kaufman LDL^T of a symmetric matrix (the `uplo` triangle), and solves from it.
template <class T> int sytrf(char uplo, int n, T* a, int lda, int* ipiv);
template <class T> int sytrs(char uplo, int n, int nrhs, const T* a, int lda, const int* ipiv,
                             T* b, int ldb);

// The file the routines come from (loading it if needed); throws stax::Error naming the files
// tried and the Debian package when none loads.
std::string library_path();

}  // namespace stax::lapack
