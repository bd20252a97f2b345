# cuda_triton's fused attention (docs/attention.md, "The GPU plugins"): the externs
# "flash_attention" and "flash_attention_backward" as Triton kernels, in the form of Triton's
# fused-attention tutorial (written for Stax). triton_attention.cpp loads this module into the
# plugin's Python workers and runs the kernels under Triton's interpreter (interpret: true) or
# compiles them to cubins and launches them.
#
# Operands: q, k, v and the mask are strided; a batch index n splits into up to four batch dims
# (sizes _, NB1, NB2, NB3; the host pads with size-1 dims) with a stride per dim and operand.
# The scale travels as the 64 bits of a float64 (SCALE_BITS). Out (then lse), dout (then dlse)
# and the gradients dq, dk, dv are packed contiguous buffers (core/ops/nn/flash_attention.cpp).
#
# Forward: one program per (batch entry, block of BLOCK_M queries): the keys in blocks of BLOCK_N,
# scores by tl.dot (input_precision "ieee": no TF32), masked (causal: key j > query i; bool mask
# false; additive mask added), online softmax (m, l, acc rescaled by exp(m - m')), causal blocks
# past the query block's last row never visited; out = acc / l, lse = m + log(l).
# Backward, from out and lse: D_i = Σ dO_i·O_i − dlse_i, P = exp(S − lse), dS = P (dO Vᵀ − D)·scale;
# stax_attn_bwd_kv (one program per block of keys: dV = Σ Pᵀ dO, dK = Σ dSᵀ Q over the query
# blocks that see them) and stax_attn_bwd_q (one program per block of queries: dQ = Σ dS K).
# No atomics: each output block is summed by one program in one order.
#
# Dropout (the externs flash_attention_dropout / _backward, DROP = 1: keep u > threshold, 2: keep
# u < threshold; 0: none): the probabilities are dropped after the softmax, as the unfused
# softmax -> dropout -> P·V and cpu_cpp's kernel (sdk flash_attention.hpp, DROPOUT) do. Element
# (n, i, j) draws the uniform u of Philox index (n·L + i)·S + j under the seed (the 0-d int64
# tensor Seed; core/tensor/random.h's recipe for the dtype: float32 24 bits of word 0, float64 53
# bits of words 0 and 1; _dropout_keep). The forward's l sums every probability, acc the kept
# ones (out = acc / l · drop scale; lse undropped); the backward draws the same u again:
# dV = Σ (keep · P · drop scale)ᵀ dO, dS = P (keep · drop scale · dO Vᵀ − D) · scale. The threshold
# and the drop scale travel as float64 bits (THR_BITS, DSCALE_BITS), like the scale.
import triton
import triton.language as tl


@triton.jit
def _batch_offset(n, NB1, NB2, NB3, s0, s1, s2, s3):
    i3 = n % NB3
    n = n // NB3
    i2 = n % NB2
    n = n // NB2
    i1 = n % NB1
    i0 = n // NB1
    return i0 * s0 + i1 * s1 + i2 * s2 + i3 * s3


@triton.jit
def _scale(SCALE_BITS, Q):
    """The scale, passed as the bits of a float64 (a float argument would be rounded to float32)
    and rounded to the operands' dtype, as the decomposition's multiplication rounds it."""
    return SCALE_BITS.to(tl.int64).to(tl.float64, bitcast=True).to(Q.dtype.element_ty)


@triton.jit
def _philox_w01(seed, idx):
    """Words 0 and 1 of Philox-4x32-10 for counter {lo32(idx), hi32(idx), 0, 0} under key
    {lo32(seed), hi32(seed)} (core/tensor/random.h's philox_words, restated: Triton's own philox
    takes a 32-bit counter or the 64-bit variant, neither is Stax's stream)."""
    c0 = (idx & 0xFFFFFFFF).to(tl.uint32)
    c1 = ((idx >> 32) & 0xFFFFFFFF).to(tl.uint32)
    c2 = tl.zeros_like(c0)
    c3 = tl.zeros_like(c0)
    k0 = (seed & 0xFFFFFFFF).to(tl.uint32)
    k1 = ((seed >> 32) & 0xFFFFFFFF).to(tl.uint32)
    for r in tl.static_range(10):
        if r > 0:
            k0 = k0 + 0x9E3779B9
            k1 = k1 + 0xBB67AE85
        _c0 = c0
        _c2 = c2
        c0 = tl.umulhi(_c2, 0xCD9E8D57) ^ c1 ^ k0
        c2 = tl.umulhi(_c0, 0xD2511F53) ^ c3 ^ k1
        c1 = _c2 * 0xCD9E8D57
        c3 = _c0 * 0xD2511F53
    return c0, c1


@triton.jit
def _dropout_keep(Seed, n, rows, cols, L, S, THR_BITS, Q, DROP: tl.constexpr):
    """Whether probability (n, row, col) survives dropout: u in Q's dtype against the threshold
    rounded to it, as cpu_cpp's dropout_keep and the interpreter's rand_like."""
    seed = tl.load(Seed)
    idx = (n * L + rows[:, None].to(tl.int64)) * S + cols[None, :]
    w0, w1 = _philox_w01(seed, idx)
    thr = THR_BITS.to(tl.int64).to(tl.float64, bitcast=True).to(Q.dtype.element_ty)
    if Q.dtype.element_ty == tl.float32:
        u = (w0 >> 8).to(tl.float32) * (1.0 / 16777216.0)
    else:
        u = (((w0.to(tl.uint64) << 32) | w1.to(tl.uint64)) >> 11).to(tl.float64) * (2.0 ** -53)
    if DROP == 1:
        keep = u > thr
    else:
        keep = u < thr
    return keep


@triton.jit
def _scores(q, k, rows, cols, Mk, moff, smr, smc, L, S, scale,
            CAUSAL: tl.constexpr, MASK: tl.constexpr):
    """(q · kᵀ) · scale, masked; with the validity of each entry."""
    s = tl.dot(q, tl.trans(k), input_precision="ieee") * scale
    valid = (rows[:, None] < L) & (cols[None, :] < S)
    if CAUSAL:
        valid = valid & (cols[None, :] <= rows[:, None])
    if MASK == 1:
        mb = tl.load(Mk + moff + rows[:, None] * smr + cols[None, :] * smc,
                     mask=(rows[:, None] < L) & (cols[None, :] < S), other=0)
        valid = valid & (mb != 0)
    if MASK == 2:
        s = s + tl.load(Mk + moff + rows[:, None] * smr + cols[None, :] * smc,
                        mask=(rows[:, None] < L) & (cols[None, :] < S), other=0.0)
    valid = valid & (s > float("-inf"))
    return tl.where(valid, s, float("-inf")), valid


@triton.jit
def stax_attn_fwd(Q, K, V, Mk, Out, L, S, E, EV, SCALE_BITS, NB1, NB2, NB3,
                  sq0, sq1, sq2, sq3, sqr, sqc, sk0, sk1, sk2, sk3, skr, skc,
                  sv0, sv1, sv2, sv3, svr, svc, sm0, sm1, sm2, sm3, smr, smc, batch,
                  Seed, THR_BITS, DSCALE_BITS,
                  CAUSAL: tl.constexpr, MASK: tl.constexpr, DROP: tl.constexpr,
                  BLOCK_M: tl.constexpr,
                  BLOCK_N: tl.constexpr, BLOCK_E: tl.constexpr, BLOCK_EV: tl.constexpr):
    pid = tl.program_id(0)
    scale = _scale(SCALE_BITS, Q)
    qblocks = tl.cdiv(L, BLOCK_M)
    n = pid // qblocks
    i0 = (pid % qblocks) * BLOCK_M
    rows = i0 + tl.arange(0, BLOCK_M)
    de = tl.arange(0, BLOCK_E)
    dv = tl.arange(0, BLOCK_EV)
    cn = tl.arange(0, BLOCK_N)
    qoff = _batch_offset(n, NB1, NB2, NB3, sq0, sq1, sq2, sq3)
    koff = _batch_offset(n, NB1, NB2, NB3, sk0, sk1, sk2, sk3)
    voff = _batch_offset(n, NB1, NB2, NB3, sv0, sv1, sv2, sv3)
    moff = _batch_offset(n, NB1, NB2, NB3, sm0, sm1, sm2, sm3)
    q = tl.load(Q + qoff + rows[:, None] * sqr + de[None, :] * sqc,
                mask=(rows[:, None] < L) & (de[None, :] < E), other=0.0)
    m_i = tl.full([BLOCK_M], float("-inf"), dtype=q.dtype)
    l_i = tl.zeros([BLOCK_M], dtype=q.dtype)
    acc = tl.zeros([BLOCK_M, BLOCK_EV], dtype=q.dtype)
    hi = S
    if CAUSAL:
        hi = tl.minimum(S, i0 + BLOCK_M)
    for j0 in range(0, hi, BLOCK_N):
        cols = j0 + cn
        k = tl.load(K + koff + cols[:, None] * skr + de[None, :] * skc,
                    mask=(cols[:, None] < S) & (de[None, :] < E), other=0.0)
        s, valid = _scores(q, k, rows, cols, Mk, moff, smr, smc, L, S, scale, CAUSAL, MASK)
        m_new = tl.maximum(m_i, tl.max(s, 1))
        m_ref = tl.where(m_new == float("-inf"), 0.0, m_new)  # every key so far masked
        p = tl.where(valid, tl.exp(s - m_ref[:, None]), 0.0)
        alpha = tl.exp(m_i - m_ref)
        l_i = l_i * alpha + tl.sum(p, 1)
        if DROP != 0:  # l has every probability, acc the kept ones
            p = tl.where(_dropout_keep(Seed, n, rows, cols, L, S, THR_BITS, Q, DROP), p, 0.0)
        v = tl.load(V + voff + cols[:, None] * svr + dv[None, :] * svc,
                    mask=(cols[:, None] < S) & (dv[None, :] < EV), other=0.0)
        acc = acc * alpha[:, None] + tl.dot(p.to(v.dtype), v, input_precision="ieee")
        m_i = m_new
    l_i = tl.where(rows < L, l_i, 1.0)  # rows past the end (not stored): no 0 / 0
    out = acc / l_i[:, None]
    if DROP != 0:
        out = out * _scale(DSCALE_BITS, Q)
    lse = m_i + tl.log(l_i)
    tl.store(Out + (n * L + rows[:, None]) * EV + dv[None, :], out,
             mask=(rows[:, None] < L) & (dv[None, :] < EV))
    tl.store(Out + batch * L * EV + n * L + rows, lse, mask=rows < L)


@triton.jit
def _row_stats(Saved, Dout, n, rows, L, EV, batch, BLOCK_EV: tl.constexpr):
    """lse and D = Σ dO·O − dlse of the rows, and their dO."""
    dv = tl.arange(0, BLOCK_EV)
    m2 = (rows[:, None] < L) & (dv[None, :] < EV)
    o = tl.load(Saved + (n * L + rows[:, None]) * EV + dv[None, :], mask=m2, other=0.0)
    do = tl.load(Dout + (n * L + rows[:, None]) * EV + dv[None, :], mask=m2, other=0.0)
    lse = tl.load(Saved + batch * L * EV + n * L + rows, mask=rows < L, other=0.0)
    dlse = tl.load(Dout + batch * L * EV + n * L + rows, mask=rows < L, other=0.0)
    return lse, tl.sum(do * o, 1) - dlse, do


@triton.jit
def stax_attn_bwd_kv(Q, K, V, Mk, Saved, Dout, Grads, L, S, E, EV, SCALE_BITS, NB1, NB2, NB3,
                     sq0, sq1, sq2, sq3, sqr, sqc, sk0, sk1, sk2, sk3, skr, skc,
                     sv0, sv1, sv2, sv3, svr, svc, sm0, sm1, sm2, sm3, smr, smc, batch,
                     Seed, THR_BITS, DSCALE_BITS,
                     CAUSAL: tl.constexpr, MASK: tl.constexpr, DROP: tl.constexpr,
                     BLOCK_M: tl.constexpr,
                     BLOCK_N: tl.constexpr, BLOCK_E: tl.constexpr, BLOCK_EV: tl.constexpr):
    pid = tl.program_id(0)
    scale = _scale(SCALE_BITS, Q)
    kblocks = tl.cdiv(S, BLOCK_N)
    n = pid // kblocks
    j0 = (pid % kblocks) * BLOCK_N
    cols = j0 + tl.arange(0, BLOCK_N)
    de = tl.arange(0, BLOCK_E)
    dv = tl.arange(0, BLOCK_EV)
    rm = tl.arange(0, BLOCK_M)
    qoff = _batch_offset(n, NB1, NB2, NB3, sq0, sq1, sq2, sq3)
    koff = _batch_offset(n, NB1, NB2, NB3, sk0, sk1, sk2, sk3)
    voff = _batch_offset(n, NB1, NB2, NB3, sv0, sv1, sv2, sv3)
    moff = _batch_offset(n, NB1, NB2, NB3, sm0, sm1, sm2, sm3)
    k = tl.load(K + koff + cols[:, None] * skr + de[None, :] * skc,
                mask=(cols[:, None] < S) & (de[None, :] < E), other=0.0)
    v = tl.load(V + voff + cols[:, None] * svr + dv[None, :] * svc,
                mask=(cols[:, None] < S) & (dv[None, :] < EV), other=0.0)
    dk = tl.zeros([BLOCK_N, BLOCK_E], dtype=k.dtype)
    dvacc = tl.zeros([BLOCK_N, BLOCK_EV], dtype=k.dtype)
    lo = 0
    if CAUSAL:
        lo = (j0 // BLOCK_M) * BLOCK_M  # query rows before the block's first key see none of it
    for i0 in range(lo, L, BLOCK_M):
        rows = i0 + rm
        q = tl.load(Q + qoff + rows[:, None] * sqr + de[None, :] * sqc,
                    mask=(rows[:, None] < L) & (de[None, :] < E), other=0.0)
        lse, delta, do = _row_stats(Saved, Dout, n, rows, L, EV, batch, BLOCK_EV)
        s, valid = _scores(q, k, rows, cols, Mk, moff, smr, smc, L, S, scale, CAUSAL, MASK)
        p = tl.where(valid, tl.exp(s - lse[:, None]), 0.0)
        dp = tl.dot(do, tl.trans(v), input_precision="ieee")
        if DROP != 0:  # p becomes the dropped probabilities (for dV), dp the gradient through them
            kj = tl.where(_dropout_keep(Seed, n, rows, cols, L, S, THR_BITS, Q, DROP),
                          _scale(DSCALE_BITS, Q), 0.0)
            dp = dp * kj
            ds = p * (dp - delta[:, None]) * scale
            p = p * kj
        else:
            ds = p * (dp - delta[:, None]) * scale
        dvacc = dvacc + tl.dot(tl.trans(p), do, input_precision="ieee")
        dk = dk + tl.dot(tl.trans(ds), q, input_precision="ieee")
    kbase = batch * L * E
    tl.store(Grads + kbase + (n * S + cols[:, None]) * E + de[None, :], dk,
             mask=(cols[:, None] < S) & (de[None, :] < E))
    tl.store(Grads + kbase + batch * S * E + (n * S + cols[:, None]) * EV + dv[None, :], dvacc,
             mask=(cols[:, None] < S) & (dv[None, :] < EV))


@triton.jit
def stax_attn_bwd_q(Q, K, V, Mk, Saved, Dout, Grads, L, S, E, EV, SCALE_BITS, NB1, NB2, NB3,
                    sq0, sq1, sq2, sq3, sqr, sqc, sk0, sk1, sk2, sk3, skr, skc,
                    sv0, sv1, sv2, sv3, svr, svc, sm0, sm1, sm2, sm3, smr, smc, batch,
                    Seed, THR_BITS, DSCALE_BITS,
                    CAUSAL: tl.constexpr, MASK: tl.constexpr, DROP: tl.constexpr,
                    BLOCK_M: tl.constexpr,
                    BLOCK_N: tl.constexpr, BLOCK_E: tl.constexpr, BLOCK_EV: tl.constexpr):
    pid = tl.program_id(0)
    scale = _scale(SCALE_BITS, Q)
    qblocks = tl.cdiv(L, BLOCK_M)
    n = pid // qblocks
    i0 = (pid % qblocks) * BLOCK_M
    rows = i0 + tl.arange(0, BLOCK_M)
    de = tl.arange(0, BLOCK_E)
    dv = tl.arange(0, BLOCK_EV)
    cn = tl.arange(0, BLOCK_N)
    qoff = _batch_offset(n, NB1, NB2, NB3, sq0, sq1, sq2, sq3)
    koff = _batch_offset(n, NB1, NB2, NB3, sk0, sk1, sk2, sk3)
    voff = _batch_offset(n, NB1, NB2, NB3, sv0, sv1, sv2, sv3)
    moff = _batch_offset(n, NB1, NB2, NB3, sm0, sm1, sm2, sm3)
    q = tl.load(Q + qoff + rows[:, None] * sqr + de[None, :] * sqc,
                mask=(rows[:, None] < L) & (de[None, :] < E), other=0.0)
    lse, delta, do = _row_stats(Saved, Dout, n, rows, L, EV, batch, BLOCK_EV)
    dq = tl.zeros([BLOCK_M, BLOCK_E], dtype=q.dtype)
    hi = S
    if CAUSAL:
        hi = tl.minimum(S, i0 + BLOCK_M)
    for j0 in range(0, hi, BLOCK_N):
        cols = j0 + cn
        k = tl.load(K + koff + cols[:, None] * skr + de[None, :] * skc,
                    mask=(cols[:, None] < S) & (de[None, :] < E), other=0.0)
        v = tl.load(V + voff + cols[:, None] * svr + dv[None, :] * svc,
                    mask=(cols[:, None] < S) & (dv[None, :] < EV), other=0.0)
        s, valid = _scores(q, k, rows, cols, Mk, moff, smr, smc, L, S, scale, CAUSAL, MASK)
        p = tl.where(valid, tl.exp(s - lse[:, None]), 0.0)
        dp = tl.dot(do, tl.trans(v), input_precision="ieee")
        if DROP != 0:
            dp = dp * tl.where(_dropout_keep(Seed, n, rows, cols, L, S, THR_BITS, Q, DROP),
                               _scale(DSCALE_BITS, Q), 0.0)
        ds = p * (dp - delta[:, None]) * scale
        dq = dq + tl.dot(ds.to(k.dtype), k, input_precision="ieee")
    tl.store(Grads + (n * L + rows[:, None]) * E + de[None, :], dq,
             mask=(rows[:, None] < L) & (de[None, :] < E))
