// The parameter block of cuda_nvrtc's fused-attention kernels (flash_attention.cu), passed by
// value at launch. This text is compiled twice: by the host (attention_extern.cpp fills it) and,
// prepended to flash_attention.cu, by NVRTC or the emulation's JIT: one layout for both. Plain C
// on purpose (no includes, no namespaces).
#ifndef STAX_CUDA_ATTENTION_PARAMS_H
#define STAX_CUDA_ATTENTION_PARAMS_H

#define kAttnRows 64   // queries per block (one thread each)
#define kAttnKeys 64   // keys per block (one thread each in the dK / dV kernel)
#define kAttnChunk 32  // head-dim columns per shared-memory tile
#define kAttnMaxDims 8 // batch dims of an operand

struct stax_attn_operand {
  const void* data;  // the tensor's offset folded in; null: absent (the mask)
  long long rs, cs;  // row and column strides (elements)
  long long bstride[kAttnMaxDims];
};

struct stax_attn_params {
  long long batch, l, s, e, ev;
  int nbd;        // batch dims (bsize, bstride)
  int mask_kind;  // 0 none, 1 bool (bytes), 2 additive (the dtype of q)
  int causal;
  int pad;
  double scale;
  long long bsize[kAttnMaxDims];
  struct stax_attn_operand q, k, v, mask;
  void* out;          // forward: out [batch, l, ev], then lse [batch, l]
  const void* saved;  // backward: the forward's packed out, lse
  const void* dout;   // backward: dout [batch, l, ev], then dlse [batch, l]
  void* grads;        // backward: dq [batch, l, e], dk [batch, s, e], dv [batch, s, ev]
  // Dropout of the probabilities (the externs flash_attention_dropout / _backward): the seed is
  // the 0-d int64 tensor the op passes (device memory, read by the kernels), keep u > threshold
  // (keep_above) or u < threshold, a kept probability times drop_scale.
  const void* drop_seed;  // null: no dropout
  int dropout, drop_keep_above;
  double drop_threshold, drop_scale;
};

#endif
