// The name of a gptrt_gemm call's form -- its operands and the epilogues
// its buffers and descriptor choose ("bf16+bias+gelu", "fp8_rowwise",
// "bf16+dbias+accumulate") -- shared by the runtime's profile labels
// (gptrt_gemm.<form>) and gptc --report's kernel counts (gemm.<form>), so
// the two read alike. Plain C++, no MLIR.
#ifndef GPTRT_ABI_GEMMFORM_H
#define GPTRT_ABI_GEMMFORM_H

#include "runtime/abi/gptrt.h"

#include <cstdint>
#include <string>

namespace gptrt {

enum class GemmOperands : unsigned { F32, Bf16, Fp8, Fp8Rowwise };

/// The operands of a GEMM whose a has dtype `aDtype` (GPTRT_DTYPE_*) and
/// whose FP8 operands are scaled as `aScaling` / `bScaling` say.
inline GemmOperands gemmOperands(int64_t aDtype, int64_t aScaling,
                                 int64_t bScaling) {
  if (aDtype == GPTRT_DTYPE_F32)
    return GemmOperands::F32;
  if (aDtype == GPTRT_DTYPE_BF16)
    return GemmOperands::Bf16;
  return aScaling == GPTRT_SCALING_ROWWISE || bScaling == GPTRT_SCALING_ROWWISE
             ? GemmOperands::Fp8Rowwise
             : GemmOperands::Fp8;
}

struct GemmForm {
  GemmOperands operands = GemmOperands::F32;
  bool bias = false, gelu = false, dgelu = false, dbias = false,
       accumulate = false;

  /// A number below kCount, distinct for each form.
  unsigned index() const {
    unsigned i = static_cast<unsigned>(operands), bit = 4;
    for (bool flag : {bias, gelu, dgelu, dbias, accumulate}) {
      i += flag ? bit : 0;
      bit *= 2;
    }
    return i;
  }
  static constexpr unsigned kCount = 4u << 5;

  /// "bf16+bias+gelu": the operands, then each epilogue.
  std::string name() const {
    static const char *const operandNames[] = {"f32", "bf16", "fp8",
                                               "fp8_rowwise"};
    std::string s = operandNames[static_cast<unsigned>(operands)];
    if (bias)
      s += "+bias";
    if (gelu)
      s += "+gelu";
    if (dgelu)
      s += "+dgelu";
    if (dbias)
      s += "+dbias";
    if (accumulate)
      s += "+accumulate";
    return s;
  }

  /// The form whose index() is `i`.
  static GemmForm fromIndex(unsigned i) {
    GemmForm f;
    f.operands = static_cast<GemmOperands>(i % 4);
    i /= 4;
    f.bias = i & 1;
    f.gelu = i & 2;
    f.dgelu = i & 4;
    f.dbias = i & 8;
    f.accumulate = i & 16;
    return f;
  }
};

} // namespace gptrt

#endif // GPTRT_ABI_GEMMFORM_H
