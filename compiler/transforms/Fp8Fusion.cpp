// Helpers of fp8-fuse-amax and fp8-fuse-cast (see Fp8Fusion.h).
#include "compiler/transforms/Fp8Fusion.h"

#include "dialects/gpt/GptDialect.h"

#include "mlir/IR/Builders.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

using namespace mlir;
namespace gpt = gptc::gpt;

namespace gptc {

Value exactSource(Value v) {
  while (Operation *def = v.getDefiningOp()) {
    if (!isa<gpt::CastOp, gpt::ReshapeOp>(def))
      break;
    auto from = dyn_cast<RankedTensorType>(def->getOperand(0).getType());
    auto to = dyn_cast<RankedTensorType>(v.getType());
    if (!from || !to)
      break;
    bool widening = isa<gpt::CastOp>(def) && from.getElementType().isBF16() &&
                    to.getElementType().isF32();
    bool sameRows = isa<gpt::ReshapeOp>(def) && from.getRank() > 0 &&
                    to.getRank() > 0 &&
                    from.getShape().back() == to.getShape().back();
    if (!widening && !sameRows)
      break;
    v = def->getOperand(0);
  }
  return v;
}

bool isFusableProducer(Operation *op) {
  if (auto mm = dyn_cast<gpt::MatmulOp>(op))
    return !mm.getBias();
  if (auto mm = dyn_cast<fp8::ScaledMatmulOp>(op))
    return !mm.getAmax();
  return isa<gpt::CastOp, gpt::LayerNormOp, gpt::GeluOp, gpt::GeluGradOp,
             gpt::AddOp>(op);
}

fp8::FusedOp fusedProducerOf(Value source, StringRef layer) {
  Operation *producer = source.getDefiningOp();
  if (!producer || source != producer->getResult(0))
    return nullptr;
  if (auto fused = dyn_cast<fp8::FusedOp>(producer))
    return fused;
  if (!isFusableProducer(producer) || isa<fp8::FusedOp>(producer->getParentOp()))
    return nullptr;
  OpBuilder b(producer);
  SmallVector<Type> types(producer->getResultTypes());
  types.push_back(RankedTensorType::get({}, b.getF32Type()));
  auto fused = fp8::FusedOp::create(b, producer->getLoc(), types, layer,
                                    /*scale=*/Value(), /*transpose=*/false);
  Block *body = new Block();
  fused.getBody().push_back(body);
  producer->moveBefore(body, body->end());
  b.setInsertionPointToEnd(body);
  auto yield = fp8::YieldOp::create(b, producer->getLoc(),
                                    producer->getResults());
  for (auto [i, result] : llvm::enumerate(producer->getResults()))
    result.replaceUsesWithIf(fused.getResult(i), [&](OpOperand &use) {
      return use.getOwner() != yield;
    });
  return fused;
}

void eraseIfDead(Value v) {
  while (Operation *def = v.getDefiningOp()) {
    if (!def->use_empty() || !isPure(def) || def->getNumOperands() != 1)
      return;
    v = def->getOperand(0);
    def->erase();
  }
}

} // namespace gptc
