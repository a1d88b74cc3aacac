/* The runtime's C ABI: everything a gptc artifact (.so) calls, and the
 * symbols it exports. Generated code never branches on the device; it calls
 * these functions, and the runtime dispatches to CPU or CUDA kernels.
 *
 * Calling convention of a kernel (what rt.kernel lowers to):
 *   void gptrt_<kernel>(gptrt_context *ctx,
 *                       <one pointer per buffer operand, ins then outs>,
 *                       <its constants, int64_t or double, in order>);
 * Buffers are dense row-major. Every kernel WRITES its outputs (it never
 * reads what was in them) unless its comment says it accumulates or works
 * in place. Element type: f32 unless stated (ids and targets are int32).
 */
#ifndef GPTRT_ABI_GPTRT_H
#define GPTRT_ABI_GPTRT_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Bumped whenever a signature below or the manifest's meaning changes. */
#define GPTRT_ABI_VERSION 41

typedef struct gptrt_context gptrt_context;

/* --- Exported by the artifact -------------------------------------------*/
/* const uint8_t *gpt_manifest(uint64_t *size);   serialized Manifest proto
 * uint32_t gpt_abi_version(void);
 * void gpt_train_step(gptrt_context *);  void gpt_eval_step(gptrt_context *);
 * void gpt_logits(gptrt_context *);      void gpt_optimizer_step(gptrt_context
 * *); void gpt_cast_weights(gptrt_context *);  optional: fills the WEIGHT_CACHE
 *   arena from the parameters (rt-cache-weight-casts) */

/* --- Context ------------------------------------------------------------*/
/* Base address of arena `index` (Manifest.arenas order). */
void *gptrt_arena_base(gptrt_context *ctx, int64_t index);

/* Writes one f32 the runtime sets before each call:
 * which = 0: loss scale (1 / gradient-accumulation steps),
 *         1: learning rate, 2: optimizer step (1-based). */
void gptrt_step_scalar(gptrt_context *ctx, float *out, int64_t which);

/* --- Kernels ------------------------------------------------------------*/
/* Element types in constants, numbered as the manifest's DType. */
#define GPTRT_DTYPE_F32 1
#define GPTRT_DTYPE_BF16 2
/* Not a storage type: as the dtype of a parameter gradient's output
 * (rt-fuse-grad-accumulation) it means f32, with the kernel's values added
 * to what the buffer holds (out[i] += v, one f32 addition each) instead of
 * stored. Taken by gptrt_reduce_rows's out, gptrt_layernorm_bwd's dw and
 * db, and the db of gptrt_quantize_fp8_dual_bgrad,
 * gptrt_quantize_fp8_transposed_bgrad and gptrt_matmul_bf16_bgrad (and
 * their _amax / _accumulate forms). */
#define GPTRT_DTYPE_F32_ACCUMULATE 257

/* dst = src in another element type: f32 -> bf16 rounds to nearest even
 * (as cuda_bf16.h's __float2bfloat16), bf16 -> f32 is exact. */
void gptrt_convert(gptrt_context *ctx, const void *src, void *dst, int64_t n,
                   int64_t from, int64_t to);
void gptrt_fill(gptrt_context *ctx, float *out, int64_t n, double value);
/* dst += src, dst f32; src is f32 or bf16 (src_dtype), widened as read. */
void gptrt_accumulate(gptrt_context *ctx, const void *src, float *dst,
                      int64_t n, int64_t src_dtype);
void gptrt_arange(gptrt_context *ctx, int32_t *out, int64_t n);

/* out[i] = table[ids[i]]: table and out both f32 or both bf16 (dtype). */
void gptrt_embedding_fwd(gptrt_context *ctx, const void *table,
                         const int32_t *ids, void *out, int64_t rows,
                         int64_t width, int64_t dtype);
/* dtable = 0, then dtable[ids[i]] += dout[i] (repeated ids add up, in f32;
 * a bf16 dtable is rounded once at the end). */
void gptrt_embedding_bwd(gptrt_context *ctx, const void *dout,
                         const int32_t *ids, void *dtable, int64_t rows,
                         int64_t table_rows, int64_t width, int64_t dout_dtype,
                         int64_t dtable_dtype);
/* dtable[ids[i]] += dout[i] for i in order, straight into the f32
 * gradient (rt-fuse-grad-accumulation): no zeroed table of its own, no
 * pass over the rows no id names. */
void gptrt_embedding_bwd_accumulate(gptrt_context *ctx, const void *dout,
                                    const int32_t *ids, float *dtable,
                                    int64_t rows, int64_t table_rows,
                                    int64_t width, int64_t dout_dtype);

/* Layer normalisation of each row of width `width` with f32 weight w and
 * bias b; mean and rstd (f32) are saved for the backward. x and out are f32
 * or bf16 storage (x_dtype, out_dtype; see "a dtype per operand" below). */
void gptrt_layernorm_fwd(gptrt_context *ctx, const void *x, const float *w,
                         const float *b, void *out, float *mean, float *rstd,
                         int64_t rows, int64_t width, double eps,
                         int64_t x_dtype, int64_t out_dtype);
/* The residual add and the layernorm after it (rt-fuse-add-layernorm):
 * x = a + b stored as x_dtype (gptrt_add without broadcast), then
 * gptrt_layernorm_fwd of the stored x. The CPU runs those two kernels; a
 * GPU does both in one pass over each row, with the same arithmetic. The
 * _amax and _cast forms (below, with the other fused epilogues) take the
 * layernorm output's FP8 epilogue. */
void gptrt_add_layernorm_fwd(gptrt_context *ctx, const void *a, const void *b,
                             const float *w, const float *bias, void *x,
                             void *out, float *mean, float *rstd, int64_t rows,
                             int64_t width, double eps, int64_t a_dtype,
                             int64_t b_dtype, int64_t x_dtype,
                             int64_t out_dtype);
/* Writes dx, dw and db (each f32 or bf16 storage, as dout and x). */
void gptrt_layernorm_bwd(gptrt_context *ctx, const void *dout, const void *x,
                         const float *w, const float *mean, const float *rstd,
                         void *dx, void *dw, void *db, int64_t rows,
                         int64_t width, int64_t dout_dtype, int64_t x_dtype,
                         int64_t dx_dtype, int64_t dw_dtype, int64_t db_dtype);
/* The same, and amax = gptrt_amax of dx as stored (rt-fuse-amax). */
void gptrt_layernorm_bwd_amax(gptrt_context *ctx, const void *dout,
                              const void *x, const float *w, const float *mean,
                              const float *rstd, void *dx, void *dw, void *db,
                              float *amax, int64_t rows, int64_t width,
                              int64_t dout_dtype, int64_t x_dtype,
                              int64_t dx_dtype, int64_t dw_dtype,
                              int64_t db_dtype);
/* The layernorm backward and the add of its dx into the residual stream's
 * gradient after it (rt-fuse-add-layernorm): gptrt_layernorm_bwd with dx
 * rounded to dx_dtype but not stored, then sum = resid + dx as gptrt_add
 * stores it (sum_dtype, no broadcast). dw and db are written as by
 * gptrt_layernorm_bwd. The CPU runs those two kernels; a GPU adds in the
 * backward's own pass, with the same roundings. The _amax and _cast forms
 * (below, with the other fused epilogues) take the sum's FP8 epilogue. */
void gptrt_layernorm_bwd_add(gptrt_context *ctx, const void *dout,
                             const void *x, const float *w, const float *mean,
                             const float *rstd, const void *resid, void *sum,
                             void *dw, void *db, int64_t rows, int64_t width,
                             int64_t dout_dtype, int64_t x_dtype,
                             int64_t dx_dtype, int64_t dw_dtype,
                             int64_t db_dtype, int64_t resid_dtype,
                             int64_t sum_dtype);

/* c[b] = op(a[b]) op(b[b]) for b < batch; op transposes when the flag is 1.
 * Strides in elements; stride_b = 0 broadcasts one b over the batch. */
void gptrt_matmul(gptrt_context *ctx, const float *a, const float *b,
                  float *c, int64_t batch, int64_t m, int64_t n, int64_t k,
                  int64_t trans_a, int64_t trans_b, int64_t stride_a,
                  int64_t stride_b, int64_t stride_c);
/* gptrt_matmul on bf16 operands (codes as uint16), f32 accumulation:
 * exactly gptrt_matmul on the operands widened to f32. c holds out_dtype
 * values: f32, or bf16 (the f32 result rounded once, to nearest even, as
 * gptrt_convert would). */
void gptrt_matmul_bf16(gptrt_context *ctx, const uint16_t *a,
                       const uint16_t *b, void *c, int64_t batch, int64_t m,
                       int64_t n, int64_t k, int64_t trans_a, int64_t trans_b,
                       int64_t stride_a, int64_t stride_b, int64_t stride_c,
                       int64_t out_dtype);
/* c = op(a) op(b) + bias (bias[j] added to every row, in f32, before the
 * one rounding of a bf16 result); otherwise as gptrt_matmul_bf16. On a GPU
 * a bf16 result's bias is first rounded to bf16 (cuBLASLt's bias epilogue
 * takes the result's type), as PyTorch's bf16 linear layers do. */
void gptrt_matmul_bf16_bias(gptrt_context *ctx, const uint16_t *a,
                            const uint16_t *b, const float *bias, void *c,
                            int64_t batch, int64_t m, int64_t n, int64_t k,
                            int64_t trans_a, int64_t trans_b,
                            int64_t stride_a, int64_t stride_b,
                            int64_t stride_c, int64_t out_dtype);
/* GEMM epilogues (rt-fuse-gemm-epilogue), on contiguous results (batch 1
 * or stride_c = m * n). matmul_bf16_bias_gelu: pre = op(a) op(b) + bias
 * stored as pre_dtype (gptrt_matmul_bf16_bias), and out = gelu(pre) as
 * out_dtype (gptrt_gelu_fwd of the stored pre). matmul_bf16_dgelu:
 * dx = gelu'(pre) * op(a) op(b), the product first stored as dg_dtype
 * (gptrt_matmul_bf16, then gptrt_gelu_bwd). The CPU runs exactly those two
 * kernels. A GPU computes the GELU, or its derivative, in the GEMM's
 * epilogue (cuBLASLt GELU_AUX_BIAS / DGELU) on the f32 result, before the
 * one rounding, where the shapes allow (pre_dtype equal to out_dtype or
 * dx_dtype, n a multiple of 8), else the two kernels. */
void gptrt_matmul_bf16_bias_gelu(gptrt_context *ctx, const uint16_t *a,
                                 const uint16_t *b, const float *bias,
                                 void *pre, void *out, int64_t batch, int64_t m,
                                 int64_t n, int64_t k, int64_t trans_a,
                                 int64_t trans_b, int64_t stride_a,
                                 int64_t stride_b, int64_t stride_c,
                                 int64_t pre_dtype, int64_t out_dtype);
void gptrt_matmul_bf16_dgelu(gptrt_context *ctx, const uint16_t *a,
                             const uint16_t *b, const void *pre, void *dx,
                             int64_t batch, int64_t m, int64_t n, int64_t k,
                             int64_t trans_a, int64_t trans_b, int64_t stride_a,
                             int64_t stride_b, int64_t stride_c,
                             int64_t dg_dtype, int64_t pre_dtype,
                             int64_t dx_dtype);
/* The weight gradient's GEMM with the bias gradient (rt-fuse-gemm-epilogue):
 * c as gptrt_matmul_bf16 with trans_a 1 and batch 1 (a stored [k, m]: the
 * output gradient, tokens x features), and db[i] = the sum over the k
 * rows of a's column i, stored as db_dtype (gptrt_reduce_rows of a). The
 * CPU runs those two kernels; a GPU sums in cuBLASLt's BGRADB epilogue
 * where it accepts the shape (db_dtype equal to out_dtype), else the two
 * kernels. */
void gptrt_matmul_bf16_bgrad(gptrt_context *ctx, const uint16_t *a,
                             const uint16_t *b, void *c, void *db,
                             int64_t batch, int64_t m, int64_t n, int64_t k,
                             int64_t trans_a, int64_t trans_b, int64_t stride_a,
                             int64_t stride_b, int64_t stride_c,
                             int64_t out_dtype, int64_t db_dtype);
/* Weight-gradient GEMMs that add into the f32 gradient buffer
 * (rt-fuse-grad-accumulation): c is f32 and c[i] += r[i], one f32
 * addition per element, where r is the f32 result the GEMM without the
 * suffix computes with out_dtype f32 -- so the product is never rounded
 * to bf16 on its way into the gradient. A GPU computes r + c in the GEMM's
 * epilogue (cuBLASLt's beta = 1). Results contiguous (batch 1 or
 * stride_c = m * n); _bgrad writes db as gptrt_matmul_bf16_bgrad. */
void gptrt_matmul_bf16_accumulate(gptrt_context *ctx, const uint16_t *a,
                                  const uint16_t *b, float *c, int64_t batch,
                                  int64_t m, int64_t n, int64_t k,
                                  int64_t trans_a, int64_t trans_b,
                                  int64_t stride_a, int64_t stride_b,
                                  int64_t stride_c);
void gptrt_matmul_bf16_bgrad_accumulate(gptrt_context *ctx, const uint16_t *a,
                                        const uint16_t *b, float *c, void *db,
                                        int64_t batch, int64_t m, int64_t n,
                                        int64_t k, int64_t trans_a,
                                        int64_t trans_b, int64_t stride_a,
                                        int64_t stride_b, int64_t stride_c,
                                        int64_t db_dtype);
/* In place: c[i, j] += bias[j]. */
void gptrt_bias_add(gptrt_context *ctx, const float *bias, float *c,
                    int64_t rows, int64_t cols);
/* Kernels with a dtype per operand (x_dtype, out_dtype, ...) read and
 * write f32 or bf16 storage: they widen bf16 as they read (exact), compute
 * in f32 and round a bf16 result once as they write, so they equal the f32
 * kernel between gptrt_convert calls bit for bit. */

/* out[j] = sum_i x[i, j], summed in f32: rows in chunks of 32, each summed
 * in row order, then the chunk sums the same way until at most 32 remain,
 * summed in row order (a fixed tree a GPU computes in parallel, so CPU and
 * GPU agree bit for bit; up to 32 rows it is row order). */
void gptrt_reduce_rows(gptrt_context *ctx, const void *x, void *out,
                       int64_t rows, int64_t cols, int64_t x_dtype,
                       int64_t out_dtype);

/* out[o, i] = a[o, i] + (broadcast_b ? b[i] : b[o, i]); out may be a. */
void gptrt_add(gptrt_context *ctx, const void *a, const void *b, void *out,
               int64_t outer, int64_t inner, int64_t broadcast_b,
               int64_t a_dtype, int64_t b_dtype, int64_t out_dtype);
void gptrt_scale(gptrt_context *ctx, const float *x, float *out, int64_t n,
                 double s);
/* GPT-2's tanh GELU and its gradient (dx = gelu'(x) * dout), in f32 over
 * f32 or bf16 storage. */
void gptrt_gelu_fwd(gptrt_context *ctx, const void *x, void *out, int64_t n,
                    int64_t x_dtype, int64_t out_dtype);
void gptrt_gelu_bwd(gptrt_context *ctx, const void *dout, const void *x,
                    void *dx, int64_t n, int64_t dout_dtype, int64_t x_dtype,
                    int64_t dx_dtype);

/* dst[o * dst_stride + dst_offset + j] = src[o * src_stride + src_offset + j]
 * for o < outer, j < len (one part of a split or concat); src and dst are
 * both f32 or both bf16 (dtype), copied as they are. */
void gptrt_copy_blocks(gptrt_context *ctx, const void *src, void *dst,
                       int64_t outer, int64_t len, int64_t dst_stride,
                       int64_t src_stride, int64_t dst_offset,
                       int64_t src_offset, int64_t dtype);
/* dst dimension i is src dimension p_i; rank <= 6, unused trailing shape
 * entries are 1 and perm entries their own index. */
void gptrt_permute(gptrt_context *ctx, const float *src, float *dst,
                   int64_t rank, int64_t s0, int64_t s1, int64_t s2,
                   int64_t s3, int64_t s4, int64_t s5, int64_t p0, int64_t p1,
                   int64_t p2, int64_t p3, int64_t p4, int64_t p5);

/* q, k, v, out: [batch, seq, width]; lse: [batch, heads, seq], f32. The
 * activations (q, k, v, out, and dout, dq, dk, dv in the backward) are all
 * f32 or all bf16 storage (dtype); scores, softmax and sums are f32. */
void gptrt_attention_fwd(gptrt_context *ctx, const void *q, const void *k,
                         const void *v, void *out, float *lse, int64_t batch,
                         int64_t seq, int64_t width, int64_t heads,
                         int64_t causal, int64_t dtype);
void gptrt_attention_bwd(gptrt_context *ctx, const void *dout, const void *q,
                         const void *k, const void *v, const void *out,
                         const float *lse, void *dq, void *dk, void *dv,
                         int64_t batch, int64_t seq, int64_t width,
                         int64_t heads, int64_t causal, int64_t dtype);
/* The same on q, k, v packed in one [batch, seq, 3 * width] buffer -- the
 * qkv GEMM's output, q in columns [0, width), k in [width, 2 width), v in
 * [2 width, 3 width) -- read in place instead of from three copies
 * (rt-fuse-qkv-attention); the backward writes dq, dk, dv packed into
 * dqkv likewise. The numbers of gptrt_attention_fwd / _bwd. */
void gptrt_attention_fwd_packed(gptrt_context *ctx, const void *qkv, void *out,
                                float *lse, int64_t batch, int64_t seq,
                                int64_t width, int64_t heads, int64_t causal,
                                int64_t dtype);
/* The same, and amax: one f32, gptrt_amax of out as stored -- the FP8
 * input of the attention projection, taken by the flash kernel as it
 * writes out (the baseline kernels run gptrt_amax after). */
void gptrt_attention_fwd_packed_amax(gptrt_context *ctx, const void *qkv,
                                     void *out, float *lse, float *amax,
                                     int64_t batch, int64_t seq, int64_t width,
                                     int64_t heads, int64_t causal,
                                     int64_t dtype);
/* And its _cast form (rt-fuse-producer-cast, delayed scaling: the scale is
 * known before the attention runs): also q = fp8(out * scale[0]) as the
 * fused epilogues below make it (rows x cols = out, out_dtype = dtype,
 * transpose 0), the attention projection's FP8 input, coded by the flash
 * kernel as it writes out (the baseline kernels cast in a second pass). */
void gptrt_attention_fwd_packed_cast(gptrt_context *ctx, const void *qkv,
                                     const float *scale, void *out, float *lse,
                                     float *amax, uint8_t *q, int64_t batch,
                                     int64_t seq, int64_t width, int64_t heads,
                                     int64_t causal, int64_t dtype,
                                     int64_t rows, int64_t cols,
                                     int64_t out_dtype, int64_t format,
                                     int64_t transpose, int64_t stat_slot);
void gptrt_attention_bwd_packed(gptrt_context *ctx, const void *dout,
                                const void *qkv, const void *out,
                                const float *lse, void *dqkv, int64_t batch,
                                int64_t seq, int64_t width, int64_t heads,
                                int64_t causal, int64_t dtype);
/* The same, and amax = gptrt_amax of the whole dqkv as stored
 * (rt-fuse-qkv-attention). */
void gptrt_attention_bwd_packed_amax(gptrt_context *ctx, const void *dout,
                                     const void *qkv, const void *out,
                                     const float *lse, void *dqkv, float *amax,
                                     int64_t batch, int64_t seq, int64_t width,
                                     int64_t heads, int64_t causal,
                                     int64_t dtype);

/* loss: one f32, the mean over rows whose target != ignore_index; lse
 * f32; logits f32 or bf16 storage (logits_dtype). */
void gptrt_cross_entropy_fwd(gptrt_context *ctx, const void *logits,
                             const int32_t *targets, float *loss, float *lse,
                             int64_t rows, int64_t vocab, int64_t padded_vocab,
                             int64_t ignore_index, int64_t logits_dtype);
/* dloss: one f32; logits and dlogits both f32 or both bf16 (dtype). */
void gptrt_cross_entropy_bwd(gptrt_context *ctx, const float *dloss,
                             const void *logits, const int32_t *targets,
                             const float *lse, void *dlogits, int64_t rows,
                             int64_t vocab, int64_t padded_vocab,
                             int64_t ignore_index, int64_t dtype);
/* The fused classifier (rt-fuse-classifier): gptrt_cross_entropy_fwd and
 * then gptrt_cross_entropy_bwd with the lse just computed, the same
 * outputs (loss, lse, dlogits), in one pass per row as llm.c does: the
 * row's log-sum-exp, then its gradient while the row is still in cache, so
 * the logits are read from memory once, not twice. The numbers are the
 * two kernels' on the CPU and for f32 logits on a GPU; a GPU reads bf16
 * rows in vectors of 8 whose (max, sum) pairs merge per vector, so lse may
 * differ in its last bits. dlogits must not overlap logits. */
void gptrt_cross_entropy_fwd_bwd(gptrt_context *ctx, const float *dloss,
                                 const void *logits, const int32_t *targets,
                                 float *loss, float *lse, void *dlogits,
                                 int64_t rows, int64_t vocab,
                                 int64_t padded_vocab, int64_t ignore_index,
                                 int64_t dtype);
/* The same, and amax: one f32, gptrt_amax of dlogits as stored (rows x
 * padded_vocab values), which a GPU takes as the kernel writes them
 * instead of reading the largest activation of the step again
 * (rt-fuse-classifier, when an FP8 GEMM reads the logits' gradient). */
void gptrt_cross_entropy_fwd_bwd_amax(gptrt_context *ctx, const float *dloss,
                                      const void *logits,
                                      const int32_t *targets, float *loss,
                                      float *lse, void *dlogits, float *amax,
                                      int64_t rows, int64_t vocab,
                                      int64_t padded_vocab,
                                      int64_t ignore_index, int64_t dtype);

/* out: one f32, sqrt(sum of squares of x). */
void gptrt_global_norm(gptrt_context *ctx, const float *x, float *out,
                       int64_t n);
/* out: one f32, min(1, max_norm / (norm + 1e-6)); 1 when max_norm <= 0. */
void gptrt_clip_scale(gptrt_context *ctx, const float *norm, float *out,
                      double max_norm);
/* PyTorch's AdamW on one parameter, with g = grad * grad_scale[0]; lr and
 * step are one f32 each (from gptrt_step_scalar). Updates param, m, v. */
void gptrt_adamw(gptrt_context *ctx, const float *grad,
                 const float *grad_scale, const float *lr, const float *step,
                 float *param, float *m, float *v, int64_t n, double beta1,
                 double beta2, double eps, double weight_decay);
/* gptrt_adamw of consecutive parameters in one call (rt-batch-adamw): n
 * elements from grad, param, m and v (the parameters lie back to back in
 * all four, as the arenas hold them); element i decays by weight_decay
 * when it lies in one of the decay_count ranges [decay_ranges[2j],
 * decay_ranges[2j + 1]) -- ascending, disjoint, within [0, n), at most
 * GPTRT_ADAMW_MAX_DECAY_RANGES -- and by 0 elsewhere: the bits of one
 * gptrt_adamw per parameter. */
#define GPTRT_ADAMW_MAX_DECAY_RANGES 64
void gptrt_adamw_multi(gptrt_context *ctx, const float *grad,
                       const float *grad_scale, const float *lr,
                       const float *step, float *param, float *m, float *v,
                       int64_t n, double beta1, double beta2, double eps,
                       double weight_decay, int64_t decay_count,
                       const int64_t *decay_ranges);

/* --- FP8 (tensorwise scaling) -------------------------------------------*/
/* FP8 formats in constants. */
#define GPTRT_FP8_E4M3 0
#define GPTRT_FP8_E5M2 1

/* out: one f32, max |x[i]| (NaN if any element is NaN); x is f32 or bf16
 * storage (x_dtype). */
void gptrt_amax(gptrt_context *ctx, const void *x, float *out, int64_t n,
                int64_t x_dtype);
/* out: one f32, fp8_max / max(amax, eps) / 2^margin, rounded down to a
 * power of two when power_of_two is 1 (computed in f32). */
void gptrt_scale_from_amax(gptrt_context *ctx, const float *amax, float *out,
                           double fp8_max, int64_t margin,
                           int64_t power_of_two, double eps);
/* q[i] = fp8(x[i] * scale[0]): round to nearest even, saturate to the
 * format's largest finite value (CUDA's __NV_SATFINITE).
 * stat_slot >= 0 names entry stat_slot of the manifest's fp8_stats: on steps
 * where the runner collects FP8 statistics, the call also records amax(x),
 * the scale, how many nonzero x became a zero code (underflow) and how many
 * were clamped beyond rounding, |x * scale| > 464 (E4M3) or >= 61440 (E5M2)
 * (saturation; nearer values round to 448 / 57344 anyway). On other
 * steps, and for stat_slot -1, it does no extra work. x is f32 or bf16
 * storage (x_dtype), widened exactly before the multiplication. */
void gptrt_quantize_fp8(gptrt_context *ctx, const void *x, const float *scale,
                        uint8_t *q, int64_t n, int64_t format,
                        int64_t stat_slot, int64_t x_dtype);
/* The same cast of x, rows x cols, with the codes written transposed:
 * q[c * rows + r] = fp8(x[r * cols + c] * scale[0]) -- the K-contiguous
 * layout a Hopper FP8 GEMM reads, made in the cast's own pass
 * (fp8-transpose-casts). Statistics as gptrt_quantize_fp8. */
void gptrt_quantize_fp8_transposed(gptrt_context *ctx, const void *x,
                                   const float *scale, uint8_t *q, int64_t rows,
                                   int64_t cols, int64_t format,
                                   int64_t stat_slot, int64_t x_dtype);
/* The same, and db = gptrt_reduce_rows of x (cols values, db_dtype), from
 * the same read (rt-fuse-dual-cast: delayed scaling's grad_weight cast of
 * an output gradient and that GEMM's bias gradient). */
void gptrt_quantize_fp8_transposed_bgrad(gptrt_context *ctx, const void *x,
                                         const float *scale, uint8_t *q,
                                         void *db, int64_t rows, int64_t cols,
                                         int64_t format, int64_t stat_slot,
                                         int64_t x_dtype, int64_t db_dtype);
/* Both casts of x (rows x cols) at one scale, from one read: q as
 * gptrt_quantize_fp8 writes it and q_t as gptrt_quantize_fp8_transposed
 * does -- the two copies of an output gradient the backward's grad_input
 * and grad_weight GEMMs read (rt-fuse-dual-cast). Each records its own
 * statistics slot (-1: none). */
void gptrt_quantize_fp8_dual(gptrt_context *ctx, const void *x,
                             const float *scale, uint8_t *q, uint8_t *q_t,
                             int64_t rows, int64_t cols, int64_t format,
                             int64_t stat_slot, int64_t stat_slot_t,
                             int64_t x_dtype);
/* The same, and db = gptrt_reduce_rows of x (cols values, db_dtype): the
 * bias gradient of the GEMM whose output gradient x is, summed from the
 * same read, bit for bit as gptrt_reduce_rows (rt-fuse-dual-cast). */
void gptrt_quantize_fp8_dual_bgrad(gptrt_context *ctx, const void *x,
                                   const float *scale, uint8_t *q, uint8_t *q_t,
                                   void *db, int64_t rows, int64_t cols,
                                   int64_t format, int64_t stat_slot,
                                   int64_t stat_slot_t, int64_t x_dtype,
                                   int64_t db_dtype);
/* The casts above with the scale_from_amax of their scale fused in front
 * (rt-fuse-cast-scale, current scaling): scale[0] = gptrt_scale_from_amax
 * of amax[0] (fp8_max, margin, power_of_two, eps as there), stored for the
 * GEMMs that read it later, and the cast at that scale -- the same scale,
 * codes, sums and statistics as the two calls, without a kernel launch
 * between them on a GPU. */
void gptrt_scale_quantize_fp8(gptrt_context *ctx, const void *x,
                              const float *amax, uint8_t *q, float *scale,
                              int64_t n, int64_t format, int64_t stat_slot,
                              int64_t x_dtype, double fp8_max, int64_t margin,
                              int64_t power_of_two, double eps);
void gptrt_scale_quantize_fp8_dual(gptrt_context *ctx, const void *x,
                                   const float *amax, uint8_t *q, uint8_t *q_t,
                                   float *scale, int64_t rows, int64_t cols,
                                   int64_t format, int64_t stat_slot,
                                   int64_t stat_slot_t, int64_t x_dtype,
                                   double fp8_max, int64_t margin,
                                   int64_t power_of_two, double eps);
void gptrt_scale_quantize_fp8_dual_bgrad(
    gptrt_context *ctx, const void *x, const float *amax, uint8_t *q,
    uint8_t *q_t, void *db, float *scale, int64_t rows, int64_t cols,
    int64_t format, int64_t stat_slot, int64_t stat_slot_t, int64_t x_dtype,
    int64_t db_dtype, double fp8_max, int64_t margin, int64_t power_of_two,
    double eps);
/* The same with delayed scaling's fp8_state_scale fused in front: scale[0]
 * = gptrt_fp8_state_scale of the amax history (history_length, fp8_max,
 * margin, power_of_two, eps, most_recent as there), stored, and the cast
 * at it (rt-fuse-cast-scale). */
void gptrt_state_quantize_fp8(gptrt_context *ctx, const void *x,
                              const float *history, uint8_t *q, float *scale,
                              int64_t n, int64_t format, int64_t stat_slot,
                              int64_t x_dtype, int64_t history_length,
                              double fp8_max, int64_t margin,
                              int64_t power_of_two, double eps,
                              int64_t most_recent);
void gptrt_state_quantize_fp8_transposed(
    gptrt_context *ctx, const void *x, const float *history, uint8_t *q,
    float *scale, int64_t rows, int64_t cols, int64_t format, int64_t stat_slot,
    int64_t x_dtype, int64_t history_length, double fp8_max, int64_t margin,
    int64_t power_of_two, double eps, int64_t most_recent);
void gptrt_state_quantize_fp8_transposed_bgrad(
    gptrt_context *ctx, const void *x, const float *history, uint8_t *q,
    void *db, float *scale, int64_t rows, int64_t cols, int64_t format,
    int64_t stat_slot, int64_t x_dtype, int64_t db_dtype,
    int64_t history_length, double fp8_max, int64_t margin,
    int64_t power_of_two, double eps, int64_t most_recent);
/* Both delayed-scaling casts of x at the one scale of its amax history, as
 * gptrt_quantize_fp8_dual(_bgrad) at the scale gptrt_fp8_state_scale makes
 * (stored in scale[0]): the row-major copy a forward or grad_input GEMM
 * reads and the transposed one of the grad_weight GEMM, when both casts
 * read one history (rt-fuse-delayed-dual-cast). */
void gptrt_state_quantize_fp8_dual(
    gptrt_context *ctx, const void *x, const float *history, uint8_t *q,
    uint8_t *q_t, float *scale, int64_t rows, int64_t cols, int64_t format,
    int64_t stat_slot, int64_t stat_slot_t, int64_t x_dtype,
    int64_t history_length, double fp8_max, int64_t margin,
    int64_t power_of_two, double eps, int64_t most_recent);
void gptrt_state_quantize_fp8_dual_bgrad(
    gptrt_context *ctx, const void *x, const float *history, uint8_t *q,
    uint8_t *q_t, void *db, float *scale, int64_t rows, int64_t cols,
    int64_t format, int64_t stat_slot, int64_t stat_slot_t, int64_t x_dtype,
    int64_t db_dtype, int64_t history_length, double fp8_max, int64_t margin,
    int64_t power_of_two, double eps, int64_t most_recent);
/* c = op(a) op(b) / (scale_a[0] * scale_b[0]) on FP8 codes (decoded
 * exactly, accumulated in f32); layouts and strides as gptrt_matmul. c is
 * f32, or bf16 (out_dtype): that f32 result rounded once. fast_accum 1
 * lets a GPU accumulate without periodic promotion to full f32 (Hopper's
 * CUBLASLT_MATMUL_DESC_FAST_ACCUM; faster, less accurate), 0 asks for the
 * precise accumulation; the CPU accumulates in f32 either way. */
void gptrt_scaled_matmul(gptrt_context *ctx, const uint8_t *a, const uint8_t *b,
                         const float *scale_a, const float *scale_b, void *c,
                         int64_t batch, int64_t m, int64_t n, int64_t k,
                         int64_t trans_a, int64_t trans_b, int64_t stride_a,
                         int64_t stride_b, int64_t stride_c, int64_t format_a,
                         int64_t format_b, int64_t fast_accum,
                         int64_t out_dtype);
/* The FP8 GEMM with its bias (rt-fuse-gemm-epilogue): on the CPU exactly
 * the two kernels it replaces -- gptrt_scaled_matmul's c in out_dtype,
 * then gptrt_add of `bias` (n f32, one per column) into c. On a GPU
 * cuBLASLt's BIAS epilogue adds the bias (rounded to bf16 for a bf16 c) to
 * the f32 sum before the one rounding, where it offers one; else the two
 * kernels. Batches must be contiguous (batch 1 or stride_c = m * n). */
void gptrt_scaled_matmul_bias(
    gptrt_context *ctx, const uint8_t *a, const uint8_t *b,
    const float *scale_a, const float *scale_b, const float *bias, void *c,
    int64_t batch, int64_t m, int64_t n, int64_t k, int64_t trans_a,
    int64_t trans_b, int64_t stride_a, int64_t stride_b, int64_t stride_c,
    int64_t format_a, int64_t format_b, int64_t fast_accum, int64_t out_dtype);

/* Rowwise scaling: x seen as rows x cols; along_cols 0 gives one value
 * per row, 1 one per column. amax_rows: largest magnitude of each (NaN if
 * it holds a NaN); row_scales: scale_from_amax of each of n amaxes;
 * quantize_rows: q[i] = fp8(x[i] * scale of its row or column), statistics
 * as gptrt_quantize_fp8 (the logged scale is the smallest). */
void gptrt_amax_rows(gptrt_context *ctx, const void *x, float *out,
                     int64_t rows, int64_t cols, int64_t along_cols,
                     int64_t x_dtype);
void gptrt_row_scales(gptrt_context *ctx, const float *amax, float *out,
                      int64_t n, double fp8_max, int64_t margin,
                      int64_t power_of_two, double eps);
void gptrt_quantize_rows(gptrt_context *ctx, const void *x,
                         const float *scales, uint8_t *q, int64_t rows,
                         int64_t cols, int64_t along_cols, int64_t format,
                         int64_t stat_slot, int64_t x_dtype);
/* gptrt_amax_rows, gptrt_row_scales and gptrt_quantize_rows of x along its
 * rows (along_cols 0) in one call (rt-fuse-rowwise-cast): amax[r],
 * scales[r] and the codes exactly as the three calls make them; on a GPU
 * one kernel, a warp per row, that reads the row for its amax and again,
 * from cache, for its codes. */
void gptrt_amax_quantize_rows(gptrt_context *ctx, const void *x, float *amax,
                              float *scales, uint8_t *q, int64_t rows,
                              int64_t cols, int64_t format, int64_t stat_slot,
                              int64_t x_dtype, double fp8_max, int64_t margin,
                              int64_t power_of_two, double eps);
/* The same codes written transposed, q[c * rows + r] (fp8-transpose-casts
 * on a rowwise cast), each scaled by x's row r (or column c). */
void gptrt_quantize_rows_transposed(gptrt_context *ctx, const void *x,
                                    const float *scales, uint8_t *q,
                                    int64_t rows, int64_t cols,
                                    int64_t along_cols, int64_t format,
                                    int64_t stat_slot, int64_t x_dtype);
/* gptrt_row_scales and gptrt_quantize_rows_transposed in one call
 * (rt-fuse-cast-scale): the scales of x's columns (along_cols 1; rows, 0)
 * made from amax and stored in scales, then the transposed codes, each
 * bit for bit what the two calls make. On a GPU the transposed cast's tile
 * kernel makes its 32 columns' scales itself: one launch fewer, and the
 * scales are never read back from memory. */
void gptrt_scale_quantize_rows_transposed(
    gptrt_context *ctx, const void *x, const float *amax, uint8_t *q,
    float *scales, int64_t rows, int64_t cols, int64_t along_cols,
    int64_t format, int64_t stat_slot, int64_t x_dtype, double fp8_max,
    int64_t margin, int64_t power_of_two, double eps);
/* gptrt_quantize_rows_transposed and gptrt_scale_quantize_rows_transposed
 * with db = gptrt_reduce_rows of x (cols values, db_dtype) from the same
 * read (rt-fuse-dual-cast: fp8-rowwise's grad_weight cast of an output
 * gradient and that GEMM's bias gradient), as
 * gptrt_quantize_fp8_transposed_bgrad does for one scale. */
void gptrt_quantize_rows_transposed_bgrad(gptrt_context *ctx, const void *x,
                                          const float *scales, uint8_t *q,
                                          void *db, int64_t rows, int64_t cols,
                                          int64_t along_cols, int64_t format,
                                          int64_t stat_slot, int64_t x_dtype,
                                          int64_t db_dtype);
void gptrt_scale_quantize_rows_transposed_bgrad(
    gptrt_context *ctx, const void *x, const float *amax, uint8_t *q, void *db,
    float *scales, int64_t rows, int64_t cols, int64_t along_cols,
    int64_t format, int64_t stat_slot, int64_t x_dtype, int64_t db_dtype,
    double fp8_max, int64_t margin, int64_t power_of_two, double eps);
/* As gptrt_scaled_matmul, with c[r, j] (r over all batch x m rows) divided
 * by scale_a[r] (rowwise_a 1, else scale_a[0]) times scale_b[j] (rowwise_b
 * 1, else scale_b[0]), in f32; a bf16 c (out_dtype) is that rounded once.
 * x of amax_rows and quantize_rows: f32 or bf16 storage (x_dtype). */
void gptrt_scaled_matmul_rowwise(
    gptrt_context *ctx, const uint8_t *a, const uint8_t *b,
    const float *scale_a, const float *scale_b, void *c, int64_t batch,
    int64_t m, int64_t n, int64_t k, int64_t trans_a, int64_t trans_b,
    int64_t stride_a, int64_t stride_b, int64_t stride_c, int64_t format_a,
    int64_t format_b, int64_t fast_accum, int64_t rowwise_a, int64_t rowwise_b,
    int64_t out_dtype);
/* The rowwise GEMM with its bias (rt-fuse-gemm-epilogue): exactly
 * gptrt_scaled_matmul_rowwise's c in out_dtype, then gptrt_add of `bias`
 * (n f32, one per column) into c; a GPU adds it in the GEMM's unscaling
 * pass, with the same two roundings. Batches must be contiguous. */
void gptrt_scaled_matmul_rowwise_bias(
    gptrt_context *ctx, const uint8_t *a, const uint8_t *b,
    const float *scale_a, const float *scale_b, const float *bias, void *c,
    int64_t batch, int64_t m, int64_t n, int64_t k, int64_t trans_a,
    int64_t trans_b, int64_t stride_a, int64_t stride_b, int64_t stride_c,
    int64_t format_a, int64_t format_b, int64_t fast_accum, int64_t rowwise_a,
    int64_t rowwise_b, int64_t out_dtype);
/* gptrt_scaled_matmul and gptrt_scaled_matmul_rowwise adding into an f32
 * c (see gptrt_matmul_bf16_accumulate): c[i] += the f32 result. */
void gptrt_scaled_matmul_accumulate(gptrt_context *ctx, const uint8_t *a,
                                    const uint8_t *b, const float *scale_a,
                                    const float *scale_b, float *c,
                                    int64_t batch, int64_t m, int64_t n,
                                    int64_t k, int64_t trans_a, int64_t trans_b,
                                    int64_t stride_a, int64_t stride_b,
                                    int64_t stride_c, int64_t format_a,
                                    int64_t format_b, int64_t fast_accum);
void gptrt_scaled_matmul_rowwise_accumulate(
    gptrt_context *ctx, const uint8_t *a, const uint8_t *b,
    const float *scale_a, const float *scale_b, float *c, int64_t batch,
    int64_t m, int64_t n, int64_t k, int64_t trans_a, int64_t trans_b,
    int64_t stride_a, int64_t stride_b, int64_t stride_c, int64_t format_a,
    int64_t format_b, int64_t fast_accum, int64_t rowwise_a, int64_t rowwise_b);

/* Delayed scaling: history[0] is the newest of `history_length` amaxes.
 * out: one f32, the scale of scale_from_amax applied to max(history) (or
 * to history[0] when most_recent is 1), or 1 while no amax has been
 * recorded (the history is all zero). */
void gptrt_fp8_state_scale(gptrt_context *ctx, const float *history,
                           float *out, int64_t history_length, double fp8_max,
                           int64_t margin, int64_t power_of_two, double eps,
                           int64_t most_recent);
/* Shifts the history and records amax[0] as the newest; a non-finite amax
 * is not recorded, so the scale stays as it was. */
void gptrt_fp8_state_update(gptrt_context *ctx, const float *amax,
                            float *history, int64_t history_length);
/* gptrt_fp8_state_update of up to 64 states at once
 * (rt-batch-fp8-state-updates): state i < count, where bit i of `mask` is
 * set, records amax[i] in history[i * history_stride .. + history_length)
 * (history_stride >= history_length floats); the others are left alone. */
void gptrt_fp8_state_update_batch(gptrt_context *ctx, const float *amax,
                                  float *history, int64_t count,
                                  int64_t history_length,
                                  int64_t history_stride, int64_t mask);

/* gptrt_fp8_state_scale of up to 64 states at once
 * (rt-batch-fp8-state-scales): state i < count, where bit i of `mask` is
 * set, makes out[i] from history[i * history_stride .. + history_length)
 * (history_stride >= history_length floats) with the same constants; the
 * other out[i] are left alone. */
void gptrt_fp8_state_scale_batch(gptrt_context *ctx, const float *history,
                                 float *out, int64_t count,
                                 int64_t history_length, int64_t history_stride,
                                 int64_t mask, double fp8_max, int64_t margin,
                                 int64_t power_of_two, double eps,
                                 int64_t most_recent);

/* Fused FP8 epilogues (fp8-fuse-amax, fp8-fuse-cast). Each runs the kernel
 * of its base name and, over that kernel's first output -- seen as rows x
 * cols values of out_dtype (1 f32, 2 bf16) --
 *   _amax: writes amax[0] = max |value| (NaN if any value is NaN), as
 *          gptrt_amax would have in a separate pass;
 *   _cast: also writes q = fp8(value * scale[0]) in `format` as
 *          gptrt_quantize_fp8 would have, transposed to cols x rows when
 *          transpose is 1, recording statistics into stat_slot likewise.
 * The extra pointers follow the base kernel's inputs (scale) and outputs
 * (amax, q); the extra constants follow its constants. */
void gptrt_convert_amax(gptrt_context *ctx, const void *src, void *dst,
                        float *amax, int64_t n, int64_t from, int64_t to,
                        int64_t rows, int64_t cols, int64_t out_dtype);
void gptrt_convert_cast(gptrt_context *ctx, const void *src,
                        const float *scale, void *dst, float *amax,
                        uint8_t *q, int64_t n, int64_t from, int64_t to,
                        int64_t rows, int64_t cols, int64_t out_dtype,
                        int64_t format, int64_t transpose, int64_t stat_slot);
void gptrt_layernorm_fwd_amax(gptrt_context *ctx, const void *x,
                              const float *w, const float *b, void *y,
                              float *mean, float *rstd, float *amax,
                              int64_t rows, int64_t width, double eps,
                              int64_t x_dtype, int64_t y_dtype,
                              int64_t out_rows, int64_t out_cols,
                              int64_t out_dtype);
void gptrt_layernorm_fwd_cast(gptrt_context *ctx, const void *x,
                              const float *w, const float *b,
                              const float *scale, void *y, float *mean,
                              float *rstd, float *amax, uint8_t *q,
                              int64_t rows, int64_t width, double eps,
                              int64_t x_dtype, int64_t y_dtype,
                              int64_t out_rows, int64_t out_cols,
                              int64_t out_dtype, int64_t format,
                              int64_t transpose, int64_t stat_slot);
void gptrt_add_layernorm_fwd_amax(
    gptrt_context *ctx, const void *a, const void *b, const float *w,
    const float *bias, void *x, void *y, float *mean, float *rstd, float *amax,
    int64_t rows, int64_t width, double eps, int64_t a_dtype, int64_t b_dtype,
    int64_t x_dtype, int64_t y_dtype, int64_t out_rows, int64_t out_cols,
    int64_t out_dtype);
void gptrt_add_layernorm_fwd_cast(
    gptrt_context *ctx, const void *a, const void *b, const float *w,
    const float *bias, const float *scale, void *x, void *y, float *mean,
    float *rstd, float *amax, uint8_t *q, int64_t rows, int64_t width,
    double eps, int64_t a_dtype, int64_t b_dtype, int64_t x_dtype,
    int64_t y_dtype, int64_t out_rows, int64_t out_cols, int64_t out_dtype,
    int64_t format, int64_t transpose, int64_t stat_slot);
/* A layernorm producer cast whose output nothing reads but the transposed
 * cast of it (rt-fuse-producer-dual-cast, delayed scaling): mean, rstd,
 * amax and q exactly as gptrt_layernorm_fwd_cast (the output rows x width,
 * out_dtype y_dtype, transpose 0) makes them, and q_t as
 * gptrt_quantize_fp8_transposed of that output at the same *scale
 * (stat_slot_t its statistics); the _add form also stores x = a + b as
 * gptrt_add_layernorm_fwd_cast does. The output itself is not an
 * argument: on a GPU it is never stored and q_t is q transposed (the same
 * codes); on the CPU it is a temporary. */
void gptrt_layernorm_fwd_cast_dual(
    gptrt_context *ctx, const void *x, const float *w, const float *b,
    const float *scale, float *mean, float *rstd, float *amax, uint8_t *q,
    uint8_t *q_t, int64_t rows, int64_t width, double eps, int64_t x_dtype,
    int64_t y_dtype, int64_t format, int64_t stat_slot, int64_t stat_slot_t);
void gptrt_add_layernorm_fwd_cast_dual(
    gptrt_context *ctx, const void *a, const void *b, const float *w,
    const float *bias, const float *scale, void *x, float *mean, float *rstd,
    float *amax, uint8_t *q, uint8_t *q_t, int64_t rows, int64_t width,
    double eps, int64_t a_dtype, int64_t b_dtype, int64_t x_dtype,
    int64_t y_dtype, int64_t format, int64_t stat_slot, int64_t stat_slot_t);
void gptrt_gelu_fwd_amax(gptrt_context *ctx, const void *x, void *y,
                         float *amax, int64_t n, int64_t x_dtype,
                         int64_t y_dtype, int64_t rows, int64_t cols,
                         int64_t out_dtype);
void gptrt_gelu_fwd_cast(gptrt_context *ctx, const void *x, const float *scale,
                         void *y, float *amax, uint8_t *q, int64_t n,
                         int64_t x_dtype, int64_t y_dtype, int64_t rows,
                         int64_t cols, int64_t out_dtype, int64_t format,
                         int64_t transpose, int64_t stat_slot);
void gptrt_gelu_bwd_amax(gptrt_context *ctx, const void *dout, const void *x,
                         void *dx, float *amax, int64_t n, int64_t dout_dtype,
                         int64_t x_dtype, int64_t dx_dtype, int64_t rows,
                         int64_t cols, int64_t out_dtype);
void gptrt_gelu_bwd_cast(gptrt_context *ctx, const void *dout, const void *x,
                         const float *scale, void *dx, float *amax, uint8_t *q,
                         int64_t n, int64_t dout_dtype, int64_t x_dtype,
                         int64_t dx_dtype, int64_t rows, int64_t cols,
                         int64_t out_dtype, int64_t format, int64_t transpose,
                         int64_t stat_slot);
/* A GELU producer cast whose output nothing reads but the transposed cast
 * of it (rt-fuse-producer-dual-cast, delayed scaling): amax and q exactly
 * as gptrt_gelu_fwd_cast (transpose 0) makes them, and q_t as
 * gptrt_quantize_fp8_transposed of that output at the same *scale
 * (stat_slot_t its statistics); the _bgrad form also db as
 * gptrt_quantize_fp8_transposed_bgrad makes it (db_dtype). The output
 * itself is not an argument: on a GPU one kernel works it out from x (and
 * dout) as it casts it and never stores it; on the CPU it is a temporary. */
void gptrt_gelu_fwd_cast_dual(gptrt_context *ctx, const void *x,
                              const float *scale, float *amax, uint8_t *q,
                              uint8_t *q_t, int64_t n, int64_t x_dtype,
                              int64_t y_dtype, int64_t rows, int64_t cols,
                              int64_t out_dtype, int64_t format,
                              int64_t stat_slot, int64_t stat_slot_t);
void gptrt_gelu_bwd_cast_dual_bgrad(
    gptrt_context *ctx, const void *dout, const void *x, const float *scale,
    float *amax, uint8_t *q, uint8_t *q_t, void *db, int64_t n,
    int64_t dout_dtype, int64_t x_dtype, int64_t dx_dtype, int64_t rows,
    int64_t cols, int64_t out_dtype, int64_t format, int64_t stat_slot,
    int64_t stat_slot_t, int64_t db_dtype);
void gptrt_add_amax(gptrt_context *ctx, const void *a, const void *b,
                    void *sum, float *amax, int64_t outer, int64_t inner,
                    int64_t broadcast_b, int64_t a_dtype, int64_t b_dtype,
                    int64_t sum_dtype, int64_t rows, int64_t cols,
                    int64_t out_dtype);
void gptrt_add_cast(gptrt_context *ctx, const void *a, const void *b,
                    const float *scale, void *sum, float *amax, uint8_t *q,
                    int64_t outer, int64_t inner, int64_t broadcast_b,
                    int64_t a_dtype, int64_t b_dtype, int64_t sum_dtype,
                    int64_t rows, int64_t cols, int64_t out_dtype,
                    int64_t format, int64_t transpose, int64_t stat_slot);
void gptrt_layernorm_bwd_add_amax(
    gptrt_context *ctx, const void *dout, const void *x, const float *w,
    const float *mean, const float *rstd, const void *resid, void *sum,
    void *dw, void *db, float *amax, int64_t rows, int64_t width,
    int64_t dout_dtype, int64_t x_dtype, int64_t dx_dtype, int64_t dw_dtype,
    int64_t db_dtype, int64_t resid_dtype, int64_t sum_dtype, int64_t out_rows,
    int64_t out_cols, int64_t out_dtype);
void gptrt_layernorm_bwd_add_cast(
    gptrt_context *ctx, const void *dout, const void *x, const float *w,
    const float *mean, const float *rstd, const void *resid, const float *scale,
    void *sum, void *dw, void *db, float *amax, uint8_t *q, int64_t rows,
    int64_t width, int64_t dout_dtype, int64_t x_dtype, int64_t dx_dtype,
    int64_t dw_dtype, int64_t db_dtype, int64_t resid_dtype, int64_t sum_dtype,
    int64_t out_rows, int64_t out_cols, int64_t out_dtype, int64_t format,
    int64_t transpose, int64_t stat_slot);
void gptrt_matmul_amax(gptrt_context *ctx, const float *a, const float *b,
                       float *c, float *amax, int64_t batch, int64_t m,
                       int64_t n, int64_t k, int64_t trans_a, int64_t trans_b,
                       int64_t stride_a, int64_t stride_b, int64_t stride_c,
                       int64_t rows, int64_t cols, int64_t out_dtype);
void gptrt_matmul_cast(gptrt_context *ctx, const float *a, const float *b,
                       const float *scale, float *c, float *amax, uint8_t *q,
                       int64_t batch, int64_t m, int64_t n, int64_t k,
                       int64_t trans_a, int64_t trans_b, int64_t stride_a,
                       int64_t stride_b, int64_t stride_c, int64_t rows,
                       int64_t cols, int64_t out_dtype, int64_t format,
                       int64_t transpose, int64_t stat_slot);
void gptrt_scaled_matmul_amax(
    gptrt_context *ctx, const uint8_t *a, const uint8_t *b,
    const float *scale_a, const float *scale_b, void *c, float *amax,
    int64_t batch, int64_t m, int64_t n, int64_t k, int64_t trans_a,
    int64_t trans_b, int64_t stride_a, int64_t stride_b, int64_t stride_c,
    int64_t format_a, int64_t format_b, int64_t fast_accum, int64_t c_dtype,
    int64_t rows, int64_t cols, int64_t out_dtype);
void gptrt_scaled_matmul_cast(
    gptrt_context *ctx, const uint8_t *a, const uint8_t *b,
    const float *scale_a, const float *scale_b, const float *scale, void *c,
    float *amax, uint8_t *q, int64_t batch, int64_t m, int64_t n, int64_t k,
    int64_t trans_a, int64_t trans_b, int64_t stride_a, int64_t stride_b,
    int64_t stride_c, int64_t format_a, int64_t format_b, int64_t fast_accum,
    int64_t c_dtype, int64_t rows, int64_t cols, int64_t out_dtype,
    int64_t format, int64_t transpose, int64_t stat_slot);

/* Data parallelism (gpt-data-parallel). grad_bucket_ready: bucket `bucket`
 * of the gradients (n f32 in the grads arena) is final; on the last
 * micro-step of an optimizer step with more than one rank, the runtime
 * starts summing it across ranks in the background, else nothing happens.
 * The bucket is cut into slices of ceil(n / ranks) elements, rank r owning
 * slice r. scatter 1 (ZeRO-1): a reduce-scatter; afterwards this rank's
 * slice holds the sums, the rest its own values. fp8_format -1 sends f32;
 * GPTRT_FP8_E4M3 sends E4M3 codes with a scale shared by all ranks
 * (max-all-reduce of the bucket's amax) to each slice's owner, which sums
 * them in f32; without scatter the sums then reach every rank as E4M3
 * under a second shared scale.
 * grad_sync: waits until all `buckets` sums of this step are done (grads:
 * the whole gradient arena, which then holds them). */
void gptrt_grad_bucket_ready(gptrt_context *ctx, float *grads, int64_t n,
                             int64_t bucket, int64_t fp8_format,
                             int64_t scatter);
void gptrt_grad_sync(gptrt_context *ctx, float *grads, int64_t buckets);

/* ZeRO-1's optimizer step (gpt-data-parallel zero=1). With one rank (no
 * shard set on the context) each is its unsharded counterpart.
 * global_norm_sharded: like global_norm over the owned gradient elements,
 * squares summed across ranks. adamw_sharded: gptrt_adamw on the owned
 * elements of one parameter (n elements whose gradient starts at element
 * grad_offset of the grads arena, which has grad_elements); `optimizer` is
 * the optimizer arena's base: unsharded m at [grad_offset], v at
 * [grad_elements + grad_offset]; sharded, the runtime's shard layout. gather_params: every
 * rank's updated elements of the params arena (n f32) to every rank. */
void gptrt_global_norm_sharded(gptrt_context *ctx, const float *grads,
                               float *out, int64_t n);
void gptrt_adamw_sharded(gptrt_context *ctx, const float *grad,
                         const float *grad_scale, const float *lr,
                         const float *step, float *param, float *optimizer,
                         int64_t n, int64_t grad_offset, int64_t grad_elements,
                         double beta1,
                         double beta2, double eps, double weight_decay);
void gptrt_gather_params(gptrt_context *ctx, float *params, int64_t n);

#ifdef __cplusplus
}
#endif

#endif /* GPTRT_ABI_GPTRT_H */
