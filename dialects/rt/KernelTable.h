// The runtime's kernel table (runtime/abi/gptrt_kernels.def) as data the
// compiler can query: each kernel's buffers and named constants, so that
// rt.kernel calls are checked against the same rows the runtime's C
// prototypes are generated from, and passes can find a constant by name.
#ifndef GPTC_DIALECTS_RT_KERNELTABLE_H
#define GPTC_DIALECTS_RT_KERNELTABLE_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"

#include <cstdint>
#include <optional>

namespace gptc::rt {

enum class KernelParamKind { Input, Output, I64, F64, I64Table, Descriptor };

/// What a buffer parameter holds, from its C element type: `void` is any
/// (its dtype is a constant), `uint8_t` an FP8 format.
enum class KernelElement { Any, F32, Bf16, Fp8, I32, None };

/// A field of a descriptor (GPTRT_FIELD): an int64_t with the value it
/// takes when a call's dictionary leaves it out.
struct KernelField {
  const char *name;
  int64_t defaultValue;
};

/// A GPTRT_DESCRIPTOR row: the C struct gptrt_<name>, its fields in order.
struct KernelDescriptor {
  llvm::StringRef name;
  llvm::ArrayRef<KernelField> fields;

  /// The field `name`, or null.
  const KernelField *field(llvm::StringRef name) const;
};

struct KernelParam {
  KernelParamKind kind;
  KernelElement element; // None for constants
  const char *name;
  /// GPTRT_IN_OPT / GPTRT_OUT_OPT / GPTRT_OUT_VALUE: the call may pass
  /// rt.null, or leave the buffer out when every buffer after it in its
  /// group is optional too. GPTRT_DESC_OPT: the descriptor may be left out
  /// when it is the last constant.
  bool optional = false;
  const KernelDescriptor *descriptor = nullptr; // Descriptor only
  /// GPTRT_OUT_VALUE: the value an output epilogue works on, which the
  /// dual cast leaves out.
  bool epilogueValue = false;

  bool isBuffer() const {
    return kind == KernelParamKind::Input || kind == KernelParamKind::Output;
  }
};

struct KernelSignature {
  llvm::StringRef name;
  /// GPTRT_KERNEL rows: rt.kernel may call them. GPTRT_ENTRY rows (the
  /// arena base) are called by rt-to-llvm itself.
  bool isKernel;
  /// Inputs, then outputs, then constants, as the C call passes them.
  llvm::ArrayRef<KernelParam> params;

  llvm::ArrayRef<KernelParam> inputs() const;
  llvm::ArrayRef<KernelParam> outputs() const;
  llvm::ArrayRef<KernelParam> constants() const;
  /// Position of the constant `name` among the constants.
  std::optional<unsigned> constantIndex(llvm::StringRef name) const;
  /// Position of the input (or output) buffer `name` among the inputs (or
  /// outputs).
  std::optional<unsigned> inputIndex(llvm::StringRef name) const;
  std::optional<unsigned> outputIndex(llvm::StringRef name) const;
};

/// Every row of the table, in its order.
llvm::ArrayRef<KernelSignature> kernelTable();

/// The row named `name` (without the gptrt_ prefix), or null.
const KernelSignature *lookupKernel(llvm::StringRef name);

/// How a parameter's element type reads in a diagnostic: "f32", "bf16",
/// "an FP8 format (f8E4M3FN or f8E5M2)", "i32", "any element type".
llvm::StringRef describeElement(KernelElement element);

} // namespace gptc::rt

#endif // GPTC_DIALECTS_RT_KERNELTABLE_H
