// Helpers of gpt-bf16-gemm and gpt-bf16-kernels (see Bf16Storage.h).
#include "compiler/transforms/Bf16Storage.h"

using namespace mlir;
namespace gpt = gptc::gpt;

namespace gptc {

namespace {
bool hasElement(Type type, bool bf16) {
  Type element = cast<RankedTensorType>(type).getElementType();
  return bf16 ? element.isBF16() : element.isF32();
}
} // namespace

gpt::CastOp widening(Value value) {
  auto cast = value.getDefiningOp<gpt::CastOp>();
  if (cast && hasElement(cast.getInput().getType(), /*bf16=*/true) &&
      hasElement(cast.getType(), /*bf16=*/false))
    return cast;
  return {};
}

gpt::CastOp onlyNarrowing(Value result) {
  if (!result.hasOneUse() || !hasElement(result.getType(), /*bf16=*/false))
    return {};
  auto cast = dyn_cast<gpt::CastOp>(*result.getUsers().begin());
  if (cast && cast->getBlock() == result.getParentBlock() &&
      hasElement(cast.getType(), /*bf16=*/true))
    return cast;
  return {};
}

void takeOverNarrowing(Value result, gpt::CastOp narrow) {
  result.setType(narrow.getType());
  narrow.getResult().replaceAllUsesWith(result);
}

} // namespace gptc
