// The precision-policy interface: for one operand of one GEMM, a policy says
// "FP8, in this format, with this scaling" or "keep high precision, because
// ...". fp8-precision asks the policy selected by its `policy` option and
// does the IR rewriting itself, so a policy -- built in or loaded from a
// plugin -- is only this decision, with no MLIR rewriting of its own.
#ifndef GPTC_COMPILER_PRECISION_PRECISIONPOLICY_H
#define GPTC_COMPILER_PRECISION_PRECISIONPOLICY_H

#include "llvm/ADT/StringRef.h"

#include <cstdint>
#include <optional>
#include <string>
#include <utility>

namespace mlir {
class Operation;
} // namespace mlir

namespace gptc {

/// Which GEMM of a layer a matmul is, as gpt-autodiff marks it: the forward
/// product, the gradient of the layer's input, or of its weight.
enum class GemmRole { Forward, GradInput, GradWeight };

enum class Fp8Format {
  E4M3, ///< max 448, 3 mantissa bits: activations and weights
  E5M2, ///< max 57344, 2 mantissa bits: gradients, which need the range
};

enum class Fp8Scaling {
  /// Scale from this step's amax of the tensor itself ("just in time").
  Current,
  /// Scale from the largest amax of the last steps (an amax history kept in
  /// an fp8.state), so the cast needs no reduction over the tensor first.
  Delayed,
  /// One scale per row of the operand along the GEMM's non-contracted
  /// dimension (each of a's M rows, each of b's N columns), from this
  /// step's amax of that row: an outlier only coarsens its own row. The
  /// GEMM divides row i x column j by both scales. (Added in plugin API 1
  /// without a version bump: older plugins never return it.)
  Rowwise,
};

/// One operand of one GEMM, everything a policy may base its decision on.
/// fp8-precision asks only about GEMMs that can run in FP8 at all (not
/// excluded, every dimension a multiple of 16, not below min-mnk).
struct GemmOperand {
  /// The gpt.matmul, for policies that read its attributes or its function.
  mlir::Operation *matmul = nullptr;
  /// The layer the GEMM belongs to, e.g. "h.3.attn.qkv" or "lm_head".
  llvm::StringRef layer;
  GemmRole role = GemmRole::Forward;
  /// 0 for the left operand (a), 1 for the right one (b).
  unsigned index = 0;
  /// True for the incoming gradient of a backward GEMM (gpt.grad_operand).
  bool isGradient = false;
  /// True for a parameter (a weight), also seen through reshapes,
  /// transposes and casts: it changes only at the optimizer step, so its
  /// current amax is exact and its casts can be made once per step.
  /// (Added in plugin API 2.)
  bool isParameter = false;
  /// The GEMM multiplies an M x K by a K x N matrix.
  int64_t m = 0, n = 0, k = 0;
  /// N of a layer named "h.N.*" (a transformer block), and the number of
  /// blocks of the model (1 + the largest such N); empty for other layers.
  std::optional<int64_t> block;
  std::optional<int64_t> blockCount;
};

/// A policy's answer for one operand: FP8 with a format and a scaling
/// recipe, or high precision with a reason the precision report prints.
struct PrecisionDecision {
  bool useFp8 = false;
  Fp8Format format = Fp8Format::E4M3;
  Fp8Scaling scaling = Fp8Scaling::Current;
  /// Delayed scaling: amaxes kept; 0 takes fp8-precision's `history`.
  int64_t amaxHistory = 0;
  /// The scale is divided by 2^margin, leaving headroom above the amax.
  int64_t margin = 0;
  /// Round the scale down to a power of two, so scaling is exact.
  bool powerOfTwo = false;
  /// Why the operand keeps high precision (read by people, in the report).
  std::string reason;

  static PrecisionDecision fp8(Fp8Format format, Fp8Scaling scaling) {
    PrecisionDecision decision;
    decision.useFp8 = true;
    decision.format = format;
    decision.scaling = scaling;
    return decision;
  }
  static PrecisionDecision keepHighPrecision(std::string reason) {
    PrecisionDecision decision;
    decision.reason = std::move(reason);
    return decision;
  }
};

/// Decides the precision of GEMM operands. A GEMM runs in FP8 only when the
/// policy picks FP8 for both of its operands; otherwise it stays bf16 and
/// the report shows the reason.
class PrecisionPolicy {
public:
  virtual ~PrecisionPolicy();

  virtual PrecisionDecision decide(const GemmOperand &operand) const = 0;

  /// False for a policy that never picks FP8 (bf16): fp8-precision then
  /// leaves the module exactly as it is, without annotating every GEMM.
  virtual bool mayUseFp8() const { return true; }
};

/// The "hybrid" formats of DESIGN.md section 4: E5M2 for the incoming
/// gradient of a backward GEMM, E4M3 for activations and weights.
Fp8Format hybridFormat(const GemmOperand &operand);

/// "forward", "grad_input" or "grad_weight", as the report spells them.
llvm::StringRef stringifyRole(GemmRole role);

} // namespace gptc

#endif // GPTC_COMPILER_PRECISION_PRECISIONPOLICY_H
