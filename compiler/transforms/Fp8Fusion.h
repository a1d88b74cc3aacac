// What fp8-fuse-amax and fp8-fuse-cast share: which ops can absorb an
// amax (and FP8 cast) into their kernel, how to find the op that produced a
// tensor's values, and how an op is wrapped into an fp8.fused.
#ifndef GPTC_COMPILER_TRANSFORMS_FP8FUSION_H
#define GPTC_COMPILER_TRANSFORMS_FP8FUSION_H

#include "dialects/fp8/Fp8Dialect.h"

#include "mlir/IR/Value.h"

namespace gptc {

/// The value whose elements `v` holds exactly, looking through widening
/// casts (bf16 -> f32 is exact) and reshapes that keep the last dimension
/// (the same rows x columns in memory).
mlir::Value exactSource(mlir::Value v);

/// True for an op rt-bufferize lowers to one runtime kernel that writes its
/// first result and has a fused "_amax"/"_cast" variant in the runtime ABI:
/// gpt.cast, gpt.layernorm, gpt.gelu, gpt.gelu_grad, gpt.add, gpt.matmul
/// without bias and
/// fp8.scaled_matmul without its own amax result.
bool isFusableProducer(mlir::Operation *op);

/// The fp8.fused that computes the amax of `source`: the one already
/// wrapping its producer, or a new one wrapping it. Null when `source` is not
/// the first result of a fusable producer (or of an fp8.fused).
fp8::FusedOp fusedProducerOf(mlir::Value source, llvm::StringRef layer);

/// Erases `v`'s defining op, and then its operands' defining ops, for as
/// long as they are pure and left without uses.
void eraseIfDead(mlir::Value v);

} // namespace gptc

#endif // GPTC_COMPILER_TRANSFORMS_FP8FUSION_H
