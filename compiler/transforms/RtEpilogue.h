// A producer kernel's output epilogue (the `epilogue` descriptor of
// runtime/abi/gptrt_kernels.def), and descriptor constants in general: the
// optional buffers and descriptor fields found by name, and a call rebuilt
// with some of them set, for the passes that fuse amax
// reductions and FP8 casts into the kernels producing the values
// (rt-bufferize's fp8.fused lowering, rt-fuse-amax, rt-fuse-producer-cast,
// rt-fuse-producer-dual-cast, and the rt-fuse passes that merge two
// producers and carry the epilogue over).
#ifndef GPTC_COMPILER_TRANSFORMS_RTEPILOGUE_H
#define GPTC_COMPILER_TRANSFORMS_RTEPILOGUE_H

#include "dialects/rt/RtDialect.h"

#include "llvm/ADT/StringRef.h"

#include <optional>
#include <utility>

namespace gptc::rt {

/// The buffer of `op` its kernel's row calls `name`, or null when the call
/// leaves it out or passes rt.null (or the row has no such buffer).
mlir::Value bufferNamed(KernelOp op, llvm::StringRef name);

/// Whether `op`'s row takes an epilogue descriptor.
bool takesEpilogue(KernelOp op);

/// Whether `op` passes an epilogue (its descriptor is there).
bool hasEpilogue(KernelOp op);

/// The epilogue field `name` of `op` (its default when the dictionary
/// leaves it out), or nullopt when `op` passes no epilogue.
std::optional<int64_t> epilogueField(KernelOp op, llvm::StringRef name);

/// A buffer to set by name; a null value leaves it empty.
using NamedBuffer = std::pair<llvm::StringRef, mlir::Value>;
using NamedField = std::pair<llvm::StringRef, int64_t>;

/// A call of `kernel` (a row taking an epilogue) at `b`'s insertion point:
/// `ins` and `outs` the base buffers (the row's buffers before its first
/// optional one that is not passed positionally), `base` the constants
/// before the descriptor, then the named buffers set and, when `fields` is
/// not empty or an epilogue buffer is set, the descriptor. Empty optional
/// buffers before a set one become rt.null; those at the end are left out.
KernelOp createWithEpilogue(mlir::OpBuilder &b, mlir::Location loc,
                            llvm::StringRef kernel, mlir::ValueRange ins,
                            mlir::ValueRange outs,
                            llvm::ArrayRef<mlir::Attribute> base,
                            llvm::ArrayRef<NamedBuffer> buffers,
                            llvm::ArrayRef<NamedField> fields);

/// `op` rebuilt in its place with `buffers` set (or emptied) and `fields`
/// set in its epilogue, the rest as it was; `op` is erased. Attributes
/// other than the op's own (rt.fp8_stat, ...) are carried over.
KernelOp withEpilogue(KernelOp op, llvm::ArrayRef<NamedBuffer> buffers,
                      llvm::ArrayRef<NamedField> fields);

/// `op`'s epilogue buffers (by name) and fields, for carrying them over to
/// another kernel of the same epilogue (an add + layernorm merge, say).
std::pair<llvm::SmallVector<NamedBuffer>, llvm::SmallVector<NamedField>>
epilogueOf(KernelOp op);

/// The descriptor constant `descriptor` of kernel `kernel` (a GPTRT_DESC
/// parameter, such as gemm's `gemm_desc`) setting `fields`; those equal to
/// their default are left out, as the verifier and rt-to-llvm fill them.
mlir::DictionaryAttr descriptorAttr(mlir::MLIRContext *context,
                                    llvm::StringRef kernel,
                                    llvm::StringRef descriptor,
                                    llvm::ArrayRef<NamedField> fields);

/// The field `name` of `op`'s descriptor constant `descriptor` (its
/// default when the dictionary leaves it out), or nullopt when `op` passes
/// no such descriptor.
std::optional<int64_t> descriptorField(KernelOp op, llvm::StringRef descriptor,
                                       llvm::StringRef name);

/// Sets `fields` in `op`'s descriptor constant `descriptor`, in place.
void setDescriptorFields(KernelOp op, llvm::StringRef descriptor,
                         llvm::ArrayRef<NamedField> fields);

} // namespace gptc::rt

#endif // GPTC_COMPILER_TRANSFORMS_RTEPILOGUE_H
