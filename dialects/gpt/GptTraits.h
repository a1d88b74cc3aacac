// Traits shared by every op of the gpt dialect (see GptOps.td's Gpt_Op).
#ifndef GPTC_DIALECTS_GPT_GPTTRAITS_H
#define GPTC_DIALECTS_GPT_GPTTRAITS_H

#include "mlir/IR/OpDefinition.h"

namespace gptc::gpt {

/// Every static dimension of the op's tensors is positive, and each tensor
/// fits in memory an int64 byte offset can address: a model with a width
/// of 0, or so wide that a tensor's bytes overflow, is refused where it is
/// parsed, with the op's location, instead of dividing by zero or
/// wrapping around in a later pass.
mlir::LogicalResult verifyTensorSizes(mlir::Operation *op);

/// Checked after the op's own verifier (as a region trait is), so that an
/// op's specific diagnostic (a head count of 0, say) comes first.
template <typename ConcreteType>
class SizedTensors
    : public mlir::OpTrait::TraitBase<ConcreteType, SizedTensors> {
public:
  static mlir::LogicalResult verifyRegionTrait(mlir::Operation *op) {
    return verifyTensorSizes(op);
  }
};

} // namespace gptc::gpt

#endif // GPTC_DIALECTS_GPT_GPTTRAITS_H
