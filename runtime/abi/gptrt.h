/* The runtime's C ABI: everything a gptc artifact (.so) calls, and the
 * symbols it exports. Generated code never branches on the device; it calls
 * these functions, and the runtime dispatches to CPU or CUDA kernels.
 *
 * The entry points are declared from the kernel table,
 * runtime/abi/gptrt_kernels.def, which documents each one; this header
 * holds the constants they take. Calling convention of a kernel (what
 * rt.kernel lowers to):
 *   void gptrt_<kernel>(gptrt_context *ctx,
 *                       <one pointer per buffer operand, ins then outs>,
 *                       <its constants, int64_t, double, const int64_t *
 *                        or const gptrt_<descriptor> *, in order>);
 * Optional buffers and descriptors the call leaves out are null.
 * Element type: f32 unless stated (ids and targets are int32).
 */
#ifndef GPTRT_ABI_GPTRT_H
#define GPTRT_ABI_GPTRT_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Bumped whenever a row of gptrt_kernels.def or the manifest's meaning
 * changes. */
#define GPTRT_ABI_VERSION 42

typedef struct gptrt_context gptrt_context;

/* --- Exported by the artifact -------------------------------------------*/
/* const uint8_t *gpt_manifest(uint64_t *size);   serialized Manifest proto
 * uint32_t gpt_abi_version(void);
 * void gpt_train_step(gptrt_context *);  void gpt_eval_step(gptrt_context *);
 * void gpt_logits(gptrt_context *);      void gpt_optimizer_step(gptrt_context
 * *); void gpt_cast_weights(gptrt_context *);  optional: fills the WEIGHT_CACHE
 *   arena from the parameters (rt-cache-weight-casts) */

/* --- Constants the kernels take -----------------------------------------*/
/* Element types in constants, numbered as the manifest's DType. */
#define GPTRT_DTYPE_F32 1
#define GPTRT_DTYPE_BF16 2
/* FP8 codes (uint8_t), as GEMM operands (gptrt_gemm's a_dtype, b_dtype). */
#define GPTRT_DTYPE_E4M3 4
#define GPTRT_DTYPE_E5M2 5
/* Not a storage type: as the dtype of a parameter gradient's output
 * (rt-fuse-grad-accumulation) it means f32, with the kernel's values added
 * to what the buffer holds (out[i] += v, one f32 addition each) instead of
 * stored. Taken by gptrt_reduce_rows's out, gptrt_layernorm_bwd's dw and
 * db, and the db of gptrt_quantize_fp8_dual_bgrad,
 * gptrt_quantize_fp8_transposed_bgrad, gptrt_gemm's c and dbias, and an
 * epilogue's db_dtype. */
#define GPTRT_DTYPE_F32_ACCUMULATE 257

/* FP8 formats in constants. */
#define GPTRT_FP8_E4M3 0
#define GPTRT_FP8_E5M2 1

/* How an FP8 GEMM operand is scaled (gptrt_gemm's a_scaling, b_scaling):
 * one scale for the tensor, or one per row of op(a) (over all batch x m
 * rows) / per column of op(b). */
#define GPTRT_SCALING_TENSOR 0
#define GPTRT_SCALING_ROWWISE 1

/* The most decay ranges one gptrt_adamw_multi takes. */
#define GPTRT_ADAMW_MAX_DECAY_RANGES 64

/* --- Descriptors and entry points, declared from the kernel table ------*/
#define GPTRT_FIELD(name, default_value) int64_t name;
#define GPTRT_DESCRIPTOR(name, fields)                                         \
  typedef struct gptrt_##name {                                                \
    fields                                                                     \
  } gptrt_##name;
#define GPTRT_IN(type, name) , const type *name
#define GPTRT_IN_OPT(type, name) , const type *name
#define GPTRT_OUT(type, name) , type *name
#define GPTRT_OUT_OPT(type, name) , type *name
#define GPTRT_I64(name) , int64_t name
#define GPTRT_F64(name) , double name
#define GPTRT_I64_TABLE(name) , const int64_t *name
#define GPTRT_DESC(desc) , const gptrt_##desc *desc
#define GPTRT_KERNEL(name, params)                                             \
  void gptrt_##name(gptrt_context *ctx params);
#define GPTRT_ENTRY(result, name, params)                                      \
  result gptrt_##name(gptrt_context *ctx params);
#include "gptrt_kernels.def"
#undef GPTRT_FIELD
#undef GPTRT_IN
#undef GPTRT_IN_OPT
#undef GPTRT_OUT
#undef GPTRT_OUT_OPT
#undef GPTRT_I64
#undef GPTRT_F64
#undef GPTRT_I64_TABLE
#undef GPTRT_DESC

#ifdef __cplusplus
}
#endif

#endif /* GPTRT_ABI_GPTRT_H */
