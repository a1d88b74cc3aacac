// fp8-reuse-scales: the amax and scale of a tensor are computed once per
// entry point, however many FP8 GEMMs cast it (see Passes.td).
#include "compiler/transforms/Fp8Fusion.h"
#include "compiler/transforms/Passes.h"

#include "mlir/IR/OperationSupport.h"
#include "llvm/ADT/DenseMap.h"

namespace gptc {
#define GEN_PASS_DEF_FP8REUSESCALES
#include "compiler/transforms/Passes.h.inc"
} // namespace gptc

using namespace mlir;
namespace fp8 = gptc::fp8;

namespace {

/// Keys an op by what it computes: name, operands, attributes and result
/// types (OperationEquivalence's notion of "the same op").
struct SameComputation : llvm::DenseMapInfo<Operation *> {
  static unsigned getHashValue(const Operation *op) {
    return OperationEquivalence::computeHash(
        const_cast<Operation *>(op), OperationEquivalence::directHashValue,
        OperationEquivalence::ignoreHashValue,
        OperationEquivalence::IgnoreLocations);
  }
  static bool isEqual(const Operation *lhs, const Operation *rhs) {
    if (lhs == rhs)
      return true;
    if (lhs == getEmptyKey() || lhs == getTombstoneKey() ||
        rhs == getEmptyKey() || rhs == getTombstoneKey())
      return false;
    return OperationEquivalence::isEquivalentTo(
        const_cast<Operation *>(lhs), const_cast<Operation *>(rhs),
        OperationEquivalence::IgnoreLocations);
  }
};

class Fp8ReuseScalesPass
    : public gptc::impl::Fp8ReuseScalesBase<Fp8ReuseScalesPass> {
public:
  using Base::Base;

  void runOnOperation() override {
    for (auto func : getOperation().getOps<func::FuncOp>())
      for (Block &block : func.getBody())
        reuseIn(block);
  }

private:
  /// In program order, so that a scale made from a merged amax finds its
  /// twin once that amax is the same value. Only ops of one block meet: the
  /// first always comes before (dominates) the later ones.
  static void reuseIn(Block &block) {
    // An amax does not depend on the shape or on an exact widening, so the
    // amax of a reshaped or widened view (grad_weight's 2-D operands) is
    // the amax of the tensor itself, whichever layer asks.
    llvm::DenseMap<Value, Value> amaxOf;
    llvm::DenseMap<Operation *, Operation *, SameComputation> firstScale;
    for (Operation &op : llvm::make_early_inc_range(block)) {
      Value earlier;
      if (auto amax = dyn_cast<fp8::AmaxOp>(op)) {
        auto [it, inserted] = amaxOf.try_emplace(
            gptc::exactSource(amax.getInput()), amax.getResult());
        if (!inserted)
          earlier = it->second;
      } else if (isa<fp8::ScaleFromAmaxOp>(op)) {
        auto [it, inserted] = firstScale.try_emplace(&op, &op);
        if (!inserted)
          earlier = it->second->getResult(0);
      }
      if (!earlier)
        continue;
      op.getResult(0).replaceAllUsesWith(earlier);
      op.erase();
    }
  }
};

} // namespace
