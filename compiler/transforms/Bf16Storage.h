// What gpt-bf16-gemm and gpt-bf16-kernels share: recognising the casts
// gpt-precision puts around bf16 storage, and giving a producer the bf16
// result its narrowing would have made.
#ifndef GPTC_COMPILER_TRANSFORMS_BF16STORAGE_H
#define GPTC_COMPILER_TRANSFORMS_BF16STORAGE_H

#include "dialects/gpt/GptDialect.h"

#include "mlir/IR/Value.h"

namespace gptc {

/// `value` as an exact f32 widening (gpt.cast) of a bf16 value, if it is.
gpt::CastOp widening(mlir::Value value);

/// The one user of the f32 `result`, if that is a narrowing of it to bf16
/// beside its producer (one inside an fp8.fused also computes an amax and
/// does not count).
gpt::CastOp onlyNarrowing(mlir::Value result);

/// Gives `result` the bf16 type of `narrow` (its only user, from
/// onlyNarrowing) and hands the narrowing's users to it; the caller erases
/// `narrow`.
void takeOverNarrowing(mlir::Value result, gpt::CastOp narrow);

} // namespace gptc

#endif // GPTC_COMPILER_TRANSFORMS_BF16STORAGE_H
