// cuda_nvrtc's fused attention (docs/attention.md, "The GPU plugins"): the externs
// "flash_attention" and "flash_attention_backward" as CUDA C. Compiled after the kernel prelude
// (cuda_printer.h: NVRTC's, or the host emulation's for the grid emulator), so exp / log are
// stax_scalar's and the CUDA built-ins are the emulator's under `emulate: true`.
//
// Forward: one thread block per (batch entry, block of kAttnRows queries), one thread per query
// row. Keys are visited in blocks of kAttnKeys; the block's K (then V) passes through shared
// memory in chunks of kAttnChunk columns of the head dim, every thread of the block loading part
// of it. Per row: scores s_j = (q · k_j) · scale, masked (causal: key j > query i; bool mask
// false; additive mask added), then the online softmax m' = max(m, max s), p = exp(s - m'),
// l' = l · exp(m - m') + Σ p, acc' = acc · exp(m - m') + Σ p v_j. Causal key blocks past the
// query block's last row are never loaded. The accumulator is the thread's own output row (global
// memory: any head dim, no register limit); at the end out = acc / l, lse = m + log(l). A row
// with every key masked gives NaN and -inf, as the decomposed softmax does.
//
// Backward (from the saved out and lse, never an L x S matrix in memory): D_i = Σ dO_i·O_i −
// dlse_i, p_ij = exp(s_ij − lse_i), dS_ij = p_ij (dO_i·v_j − D_i) · scale.
//   * stax_flash_bwd_kv: one block per (batch entry, block of kAttnKeys keys), one thread per key
//     row j: a pass over the query blocks that see the keys (Q, then dO through shared memory),
//     dV_j += Σ_i p_ij dO_i and dK_j += Σ_i dS_ij q_i in the thread's own rows of dk / dv.
//   * stax_flash_bwd_q: one block per (batch entry, block of kAttnRows queries), one thread per
//     query row i: a pass over the key blocks (K, V through shared memory), dQ_i += Σ_j dS_ij k_j.
// No atomics: every output element is written by one thread, summed in one fixed order, so the
// results do not depend on the grid or on timing.
//
// Dropout (the externs flash_attention_dropout / flash_attention_dropout_backward, p.dropout):
// the probabilities are dropped after the softmax as the unfused softmax -> dropout -> P·V does
// and as cpu_cpp's kernel (sdk flash_attention.hpp, DROPOUT) does: element (n, i, j) draws the
// uniform u of Philox index (n·l + i)·s + j under the seed (core/tensor/random.h's recipe for T:
// float32 24 bits of word 0, float64 53 bits of words 0 and 1), kept when u > threshold
// (keep_above) or u < threshold, a kept one times drop_scale. The forward's normaliser l sums
// every probability, the accumulator the kept ones (out = acc / l · drop_scale; lse undropped);
// the backward draws the same u again (no mask saved): dV_j += Σ_i keep p_ij drop_scale dO_i,
// dS_ij = p_ij (keep drop_scale dO_i·v_j − D_i) · scale.
//
// Operands: q, k, v and the mask are strided (batch dims flattened by the host into kAttnMaxDims
// sizes and strides, an element's address data + Σ idx_d · bstride_d + i · rs + j · cs); out,
// lse, dout, dlse, dq, dk, dv are contiguous packed buffers (core/ops/nn/flash_attention.cpp).

// stax_attn_params, kAttnRows ...: attention_params.h, which the host source prepends.

__device__ inline long long stax_attn_base(const stax_attn_params& p, const stax_attn_operand& o,
                                           long long n) {
  long long off = 0;
  for (int d = p.nbd - 1; d >= 0; --d) {
    off += (n % p.bsize[d]) * o.bstride[d];
    n /= p.bsize[d];
  }
  return off;
}

template <class T>
__device__ inline T stax_attn_ninf() {
  return T(-__builtin_huge_val());
}

// The score of query i and key j after scaling and masking (dot: q_i · k_j).
template <class T>
__device__ inline T stax_attn_score(const stax_attn_params& p, long long mbase, long long i,
                                    long long j, T dot) {
  T s = dot * T(p.scale);
  if (p.causal && j > i) return stax_attn_ninf<T>();
  if (p.mask_kind == 1) {
    const unsigned char* m = static_cast<const unsigned char*>(p.mask.data);
    if (!m[mbase + i * p.mask.rs + j * p.mask.cs]) return stax_attn_ninf<T>();
  } else if (p.mask_kind == 2) {
    s = s + static_cast<const T*>(p.mask.data)[mbase + i * p.mask.rs + j * p.mask.cs];
  }
  return s;
}

// Philox-4x32-10 of counter {lo32(index), hi32(index), 0, 0} under key {lo32(seed), hi32(seed)}
// (core/tensor/random.h's philox_words, restated for the device: this text includes nothing of
// core), words 0 and 1.
__device__ inline void stax_attn_philox(unsigned long long seed, unsigned long long index,
                                        unsigned& w0, unsigned& w1) {
  unsigned c0 = unsigned(index), c1 = unsigned(index >> 32), c2 = 0u, c3 = 0u;
  unsigned k0 = unsigned(seed), k1 = unsigned(seed >> 32);
  for (int r = 0; r < 10; ++r) {
    if (r > 0) {
      k0 += 0x9E3779B9u;
      k1 += 0xBB67AE85u;
    }
    const unsigned long long p0 = 0xD2511F53ull * c0;
    const unsigned long long p1 = 0xCD9E8D57ull * c2;
    const unsigned n0 = unsigned(p1 >> 32) ^ c1 ^ k0;
    const unsigned n2 = unsigned(p0 >> 32) ^ c3 ^ k1;
    c1 = unsigned(p1);
    c3 = unsigned(p0);
    c0 = n0;
    c2 = n2;
  }
  w0 = c0;
  w1 = c1;
}

// The dropout seed (p.dropout: the 0-d int64 tensor's value; else 0), read once per task.
__device__ inline unsigned long long stax_attn_seed(const stax_attn_params& p) {
  return p.dropout ? *static_cast<const unsigned long long*>(p.drop_seed) : 0ull;
}

// Whether probability (n, i, j) survives dropout: u of Philox index (n·l + i)·s + j in T's
// precision against the threshold in T, as cpu_cpp's dropout_keep and the interpreter's rand_like.
template <class T>
__device__ inline bool stax_attn_keep(const stax_attn_params& p, unsigned long long seed,
                                      long long n, long long i, long long j) {
  unsigned w0, w1;
  stax_attn_philox(seed, (unsigned long long)((n * p.l + i) * p.s + j), w0, w1);
  T u;
  if (sizeof(T) == 4)
    u = T(w0 >> 8) * T(1.0f / 16777216.0f);
  else
    u = T((((unsigned long long)w0 << 32) | w1) >> 11) * T(1.1102230246251565e-16);  // 2^-53
  const T thr = T(p.drop_threshold);
  return p.drop_keep_above ? u > thr : u < thr;
}

// Loads rows [r0, r0 + nr) x columns [c0, c0 + nc) of one operand into tile (kAttnKeys x
// kAttnChunk, zeros outside), every thread of the block a share; barriers before and after.
template <class T>
__device__ inline void stax_attn_load(T* tile, const T* base, long long rs, long long cs,
                                      long long r0, long long nr, long long c0, long long nc) {
  __syncthreads();
  for (int t = threadIdx.x; t < kAttnKeys * kAttnChunk; t += blockDim.x) {
    int r = t / kAttnChunk, c = t % kAttnChunk;
    tile[t] = (r < nr && c < nc) ? base[(r0 + r) * rs + (c0 + c) * cs] : T(0);
  }
  __syncthreads();
}

// Same for a contiguous packed operand of row length `width`.
template <class T>
__device__ inline void stax_attn_load_packed(T* tile, const T* base, long long width, long long r0,
                                             long long nr, long long c0, long long nc) {
  stax_attn_load(tile, base, width, 1LL, r0, nr, c0, nc);
}

template <class T>
__device__ void stax_flash_fwd(const stax_attn_params& p) {
  __shared__ T tile[kAttnKeys * kAttnChunk];
  const long long qblocks = (p.l + kAttnRows - 1) / kAttnRows;
  const T ninf = stax_attn_ninf<T>();
  for (long long task = blockIdx.x; task < p.batch * qblocks; task += gridDim.x) {
    const long long n = task / qblocks, i0 = (task % qblocks) * kAttnRows;
    const long long i = i0 + threadIdx.x;
    const bool row = i < p.l;
    const T* q = static_cast<const T*>(p.q.data) + stax_attn_base(p, p.q, n);
    const T* k = static_cast<const T*>(p.k.data) + stax_attn_base(p, p.k, n);
    const T* v = static_cast<const T*>(p.v.data) + stax_attn_base(p, p.v, n);
    const long long mbase = p.mask_kind ? stax_attn_base(p, p.mask, n) : 0;
    T* out = static_cast<T*>(p.out) + (n * p.l + (row ? i : 0)) * p.ev;
    if (row)
      for (long long d = 0; d < p.ev; ++d) out[d] = T(0);
    T m = ninf, l = T(0);
    const unsigned long long seed = stax_attn_seed(p);
    // Causal: keys past the block's last row are masked for every row of it.
    long long kend = p.s;
    if (p.causal && i0 + kAttnRows < kend) kend = i0 + kAttnRows;
    for (long long j0 = 0; j0 < kend; j0 += kAttnKeys) {
      const long long nj = p.s - j0 < kAttnKeys ? p.s - j0 : kAttnKeys;
      T s[kAttnKeys];
      for (int jj = 0; jj < kAttnKeys; ++jj) s[jj] = T(0);
      for (long long d0 = 0; d0 < p.e; d0 += kAttnChunk) {
        const long long nd = p.e - d0 < kAttnChunk ? p.e - d0 : kAttnChunk;
        stax_attn_load(tile, k, p.k.rs, p.k.cs, j0, nj, d0, nd);
        if (!row) continue;
        T qc[kAttnChunk];
        for (int dd = 0; dd < nd; ++dd) qc[dd] = q[i * p.q.rs + (d0 + dd) * p.q.cs];
        for (int jj = 0; jj < nj; ++jj) {
          T a = s[jj];
          for (int dd = 0; dd < nd; ++dd) a = a + qc[dd] * tile[jj * kAttnChunk + dd];
          s[jj] = a;
        }
      }
      T alpha = T(1);
      if (row) {
        T mb = m;
        for (int jj = 0; jj < kAttnKeys; ++jj) {
          s[jj] = jj < nj ? stax_attn_score<T>(p, mbase, i, j0 + jj, s[jj]) : ninf;
          if (s[jj] > mb) mb = s[jj];
        }
        T sum = T(0);
        for (int jj = 0; jj < kAttnKeys; ++jj) {
          s[jj] = mb == ninf ? T(0) : stax_scalar::exp(s[jj] - mb);  // p_j (0 where masked)
          sum = sum + s[jj];
        }
        alpha = mb == ninf ? T(1) : stax_scalar::exp(m - mb);
        l = l * alpha + sum;
        m = mb;
        if (p.dropout)  // the normaliser has every probability, the accumulator the kept ones
          for (int jj = 0; jj < nj; ++jj)
            if (!stax_attn_keep<T>(p, seed, n, i, j0 + jj)) s[jj] = T(0);
      }
      for (long long d0 = 0; d0 < p.ev; d0 += kAttnChunk) {
        const long long nd = p.ev - d0 < kAttnChunk ? p.ev - d0 : kAttnChunk;
        stax_attn_load(tile, v, p.v.rs, p.v.cs, j0, nj, d0, nd);
        if (!row) continue;
        for (int dd = 0; dd < nd; ++dd) {
          T a = out[d0 + dd] * alpha;
          for (int jj = 0; jj < nj; ++jj) a = a + s[jj] * tile[jj * kAttnChunk + dd];
          out[d0 + dd] = a;
        }
      }
    }
    if (row) {
      if (p.dropout) {
        const T ds = T(p.drop_scale);
        for (long long d = 0; d < p.ev; ++d) out[d] = out[d] / l * ds;
      } else {
        for (long long d = 0; d < p.ev; ++d) out[d] = out[d] / l;
      }
      static_cast<T*>(p.out)[p.batch * p.l * p.ev + n * p.l + i] = m + stax_scalar::log(l);
    }
  }
}

// D_i = Σ dO_i · O_i − dlse_i (packed rows of the forward's output and of the gradient).
template <class T>
__device__ inline T stax_attn_delta(const stax_attn_params& p, long long n, long long i) {
  const T* o = static_cast<const T*>(p.saved) + (n * p.l + i) * p.ev;
  const T* g = static_cast<const T*>(p.dout) + (n * p.l + i) * p.ev;
  T d = T(0);
  for (long long x = 0; x < p.ev; ++x) d = d + g[x] * o[x];
  return d - static_cast<const T*>(p.dout)[p.batch * p.l * p.ev + n * p.l + i];
}

template <class T>
__device__ inline T stax_attn_lse(const stax_attn_params& p, long long n, long long i) {
  return static_cast<const T*>(p.saved)[p.batch * p.l * p.ev + n * p.l + i];
}

// P (into dot: the dropped probability keep · p · drop_scale under dropout, what dV sums) and dS
// (into dp) of query row i of entry n against key j, from the scores' dot and dO·v.
template <class T>
__device__ inline void stax_attn_probs(const stax_attn_params& p, unsigned long long seed,
                                       long long mbase, long long n, long long i, long long j,
                                       T lse, T delta, T& dot, T& dp) {
  T s = stax_attn_score<T>(p, mbase, i, j, dot);
  T pr = s == stax_attn_ninf<T>() ? T(0) : stax_scalar::exp(s - lse);
  if (p.dropout) {
    const T kj = stax_attn_keep<T>(p, seed, n, i, j) ? T(p.drop_scale) : T(0);
    dot = pr * kj;
    dp = pr * (dp * kj - delta) * T(p.scale);
    return;
  }
  dot = pr;
  dp = pr * (dp - delta) * T(p.scale);
}

template <class T>
__device__ void stax_flash_bwd_kv(const stax_attn_params& p) {
  __shared__ T tile[kAttnKeys * kAttnChunk];
  __shared__ T stats[2 * kAttnRows];  // lse, D of the query block's rows
  const long long kblocks = (p.s + kAttnKeys - 1) / kAttnKeys;
  const T* dout = static_cast<const T*>(p.dout);
  const unsigned long long seed = stax_attn_seed(p);
  for (long long task = blockIdx.x; task < p.batch * kblocks; task += gridDim.x) {
    const long long n = task / kblocks, j0 = (task % kblocks) * kAttnKeys;
    const long long j = j0 + threadIdx.x;
    const bool col = j < p.s;
    const T* q = static_cast<const T*>(p.q.data) + stax_attn_base(p, p.q, n);
    const T* k = static_cast<const T*>(p.k.data) + stax_attn_base(p, p.k, n);
    const T* v = static_cast<const T*>(p.v.data) + stax_attn_base(p, p.v, n);
    const long long mbase = p.mask_kind ? stax_attn_base(p, p.mask, n) : 0;
    T* dk = static_cast<T*>(p.grads) + p.batch * p.l * p.e + (n * p.s + (col ? j : 0)) * p.e;
    T* dv = static_cast<T*>(p.grads) + p.batch * p.l * p.e + p.batch * p.s * p.e +
            (n * p.s + (col ? j : 0)) * p.ev;
    if (col) {
      for (long long d = 0; d < p.e; ++d) dk[d] = T(0);
      for (long long d = 0; d < p.ev; ++d) dv[d] = T(0);
    }
    const T* g = dout + n * p.l * p.ev;
    // Causal: query rows before the key block's first key see none of its keys.
    const long long istart = p.causal ? j0 / kAttnRows * kAttnRows : 0;
    for (long long i0 = istart; i0 < p.l; i0 += kAttnRows) {
      const long long ni = p.l - i0 < kAttnRows ? p.l - i0 : kAttnRows;
      __syncthreads();
      if (threadIdx.x < ni) {
        stats[threadIdx.x] = stax_attn_lse<T>(p, n, i0 + threadIdx.x);
        stats[kAttnRows + threadIdx.x] = stax_attn_delta<T>(p, n, i0 + threadIdx.x);
      }
      T sc[kAttnRows], dp[kAttnRows];
      for (int ii = 0; ii < kAttnRows; ++ii) sc[ii] = dp[ii] = T(0);
      for (long long d0 = 0; d0 < p.e; d0 += kAttnChunk) {  // sc = q_i · k_j
        const long long nd = p.e - d0 < kAttnChunk ? p.e - d0 : kAttnChunk;
        stax_attn_load(tile, q, p.q.rs, p.q.cs, i0, ni, d0, nd);
        if (!col) continue;
        for (int dd = 0; dd < nd; ++dd) {
          const T kd = k[j * p.k.rs + (d0 + dd) * p.k.cs];
          for (int ii = 0; ii < ni; ++ii) sc[ii] = sc[ii] + tile[ii * kAttnChunk + dd] * kd;
        }
      }
      for (long long d0 = 0; d0 < p.ev; d0 += kAttnChunk) {  // dp = dO_i · v_j
        const long long nd = p.ev - d0 < kAttnChunk ? p.ev - d0 : kAttnChunk;
        stax_attn_load_packed(tile, g, p.ev, i0, ni, d0, nd);
        if (!col) continue;
        for (int dd = 0; dd < nd; ++dd) {
          const T vd = v[j * p.v.rs + (d0 + dd) * p.v.cs];
          for (int ii = 0; ii < ni; ++ii) dp[ii] = dp[ii] + tile[ii * kAttnChunk + dd] * vd;
        }
      }
      if (col)
        for (int ii = 0; ii < ni; ++ii)
          stax_attn_probs<T>(p, seed, mbase, n, i0 + ii, j, stats[ii], stats[kAttnRows + ii], sc[ii],
                             dp[ii]);
      for (long long d0 = 0; d0 < p.ev; d0 += kAttnChunk) {  // dV_j += Σ_i p_ij dO_i
        const long long nd = p.ev - d0 < kAttnChunk ? p.ev - d0 : kAttnChunk;
        stax_attn_load_packed(tile, g, p.ev, i0, ni, d0, nd);
        if (!col) continue;
        for (int dd = 0; dd < nd; ++dd) {
          T a = dv[d0 + dd];
          for (int ii = 0; ii < ni; ++ii) a = a + sc[ii] * tile[ii * kAttnChunk + dd];
          dv[d0 + dd] = a;
        }
      }
      for (long long d0 = 0; d0 < p.e; d0 += kAttnChunk) {  // dK_j += Σ_i dS_ij q_i
        const long long nd = p.e - d0 < kAttnChunk ? p.e - d0 : kAttnChunk;
        stax_attn_load(tile, q, p.q.rs, p.q.cs, i0, ni, d0, nd);
        if (!col) continue;
        for (int dd = 0; dd < nd; ++dd) {
          T a = dk[d0 + dd];
          for (int ii = 0; ii < ni; ++ii) a = a + dp[ii] * tile[ii * kAttnChunk + dd];
          dk[d0 + dd] = a;
        }
      }
    }
  }
}

template <class T>
__device__ void stax_flash_bwd_q(const stax_attn_params& p) {
  __shared__ T tile[kAttnKeys * kAttnChunk];
  const long long qblocks = (p.l + kAttnRows - 1) / kAttnRows;
  for (long long task = blockIdx.x; task < p.batch * qblocks; task += gridDim.x) {
    const long long n = task / qblocks, i0 = (task % qblocks) * kAttnRows;
    const long long i = i0 + threadIdx.x;
    const bool row = i < p.l;
    const T* q = static_cast<const T*>(p.q.data) + stax_attn_base(p, p.q, n);
    const T* k = static_cast<const T*>(p.k.data) + stax_attn_base(p, p.k, n);
    const T* v = static_cast<const T*>(p.v.data) + stax_attn_base(p, p.v, n);
    const long long mbase = p.mask_kind ? stax_attn_base(p, p.mask, n) : 0;
    const T* g = static_cast<const T*>(p.dout) + (n * p.l + (row ? i : 0)) * p.ev;
    T* dq = static_cast<T*>(p.grads) + (n * p.l + (row ? i : 0)) * p.e;
    T lse = T(0), delta = T(0);
    const unsigned long long seed = stax_attn_seed(p);
    if (row) {
      for (long long d = 0; d < p.e; ++d) dq[d] = T(0);
      lse = stax_attn_lse<T>(p, n, i);
      delta = stax_attn_delta<T>(p, n, i);
    }
    long long kend = p.s;
    if (p.causal && i0 + kAttnRows < kend) kend = i0 + kAttnRows;
    for (long long j0 = 0; j0 < kend; j0 += kAttnKeys) {
      const long long nj = p.s - j0 < kAttnKeys ? p.s - j0 : kAttnKeys;
      T sc[kAttnKeys], dp[kAttnKeys];
      for (int jj = 0; jj < kAttnKeys; ++jj) sc[jj] = dp[jj] = T(0);
      for (long long d0 = 0; d0 < p.e; d0 += kAttnChunk) {  // sc = q_i · k_j
        const long long nd = p.e - d0 < kAttnChunk ? p.e - d0 : kAttnChunk;
        stax_attn_load(tile, k, p.k.rs, p.k.cs, j0, nj, d0, nd);
        if (!row) continue;
        for (int dd = 0; dd < nd; ++dd) {
          const T qd = q[i * p.q.rs + (d0 + dd) * p.q.cs];
          for (int jj = 0; jj < nj; ++jj) sc[jj] = sc[jj] + qd * tile[jj * kAttnChunk + dd];
        }
      }
      for (long long d0 = 0; d0 < p.ev; d0 += kAttnChunk) {  // dp = dO_i · v_j
        const long long nd = p.ev - d0 < kAttnChunk ? p.ev - d0 : kAttnChunk;
        stax_attn_load(tile, v, p.v.rs, p.v.cs, j0, nj, d0, nd);
        if (!row) continue;
        for (int dd = 0; dd < nd; ++dd) {
          const T gd = g[d0 + dd];
          for (int jj = 0; jj < nj; ++jj) dp[jj] = dp[jj] + gd * tile[jj * kAttnChunk + dd];
        }
      }
      if (row)
        for (int jj = 0; jj < nj; ++jj)
          stax_attn_probs<T>(p, seed, mbase, n, i, j0 + jj, lse, delta, sc[jj], dp[jj]);
      for (long long d0 = 0; d0 < p.e; d0 += kAttnChunk) {  // dQ_i += Σ_j dS_ij k_j
        const long long nd = p.e - d0 < kAttnChunk ? p.e - d0 : kAttnChunk;
        stax_attn_load(tile, k, p.k.rs, p.k.cs, j0, nj, d0, nd);
        if (!row) continue;
        for (int dd = 0; dd < nd; ++dd) {
          T a = dq[d0 + dd];
          for (int jj = 0; jj < nj; ++jj) a = a + dp[jj] * tile[jj * kAttnChunk + dd];
          dq[d0 + dd] = a;
        }
      }
    }
  }
}

// The entry points (one per kernel and dtype): the launch passes the parameter block by value.
#define STAX_ATTN_ENTRY(name, fn, T) \
  extern "C" __global__ void __launch_bounds__(kAttnRows) name(stax_attn_params p) { fn<T>(p); }
STAX_ATTN_ENTRY(stax_flash_fwd_f32, stax_flash_fwd, float)
STAX_ATTN_ENTRY(stax_flash_fwd_f64, stax_flash_fwd, double)
STAX_ATTN_ENTRY(stax_flash_bwd_kv_f32, stax_flash_bwd_kv, float)
STAX_ATTN_ENTRY(stax_flash_bwd_kv_f64, stax_flash_bwd_kv, double)
STAX_ATTN_ENTRY(stax_flash_bwd_q_f32, stax_flash_bwd_q, float)
STAX_ATTN_ENTRY(stax_flash_bwd_q_f64, stax_flash_bwd_q, double)
