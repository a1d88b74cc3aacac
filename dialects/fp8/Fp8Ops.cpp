// Verifiers of the fp8 dialect's ops.
#include "dialects/common/MatmulShape.h"
#include "dialects/fp8/Fp8Dialect.h"

#include "mlir/IR/TypeUtilities.h"

using namespace mlir;
using namespace gptc;
using namespace gptc::fp8;

namespace {

bool isFp8(Type type) { return isa<Float8E4M3FNType, Float8E5M2Type>(type); }

LogicalResult verifyLayerName(Operation *op, StringRef layer) {
  if (layer.empty())
    return op->emitOpError("needs the name of the layer it scales (e.g. "
                           "\"h.3.mlp.fc\"), got an empty string");
  return success();
}

/// The quantized and unquantized sides of a cast have the same shape.
LogicalResult verifyCastShapes(Operation *op, RankedTensorType from,
                               RankedTensorType to) {
  if (!shapesCompatible(from.getShape(), to.getShape()))
    return op->emitOpError() << "result shape " << shapeString(to.getShape())
                             << " must equal the input shape "
                             << shapeString(from.getShape());
  return success();
}

LogicalResult verifyStateUse(Operation *op, FlatSymbolRefAttr state,
                             SymbolTableCollection &symbols) {
  if (!symbols.lookupNearestSymbolFrom<StateOp>(op, state))
    return op->emitOpError() << "refers to " << state
                             << ", which is not an fp8.state in this module";
  return success();
}

} // namespace

#define GET_OP_CLASSES
#include "dialects/fp8/Fp8Ops.cpp.inc"

LogicalResult AmaxOp::verify() { return verifyLayerName(*this, getLayer()); }

LogicalResult ScaleFromAmaxOp::verify() {
  return verifyLayerName(*this, getLayer());
}

LogicalResult QuantizeOp::verify() {
  RankedTensorType result = getType();
  if (!isFp8(result.getElementType()))
    return emitOpError() << "quantizes to f8E4M3FN or f8E5M2, got "
                         << result.getElementType()
                         << "; for other types use a plain cast";
  if (failed(verifyCastShapes(*this, getInput().getType(), result)))
    return failure();
  return verifyLayerName(*this, getLayer());
}

LogicalResult DequantizeOp::verify() {
  RankedTensorType input = getInput().getType();
  if (!isFp8(input.getElementType()))
    return emitOpError() << "dequantizes f8E4M3FN or f8E5M2, got "
                         << input.getElementType();
  if (failed(verifyCastShapes(*this, input, getType())))
    return failure();
  return verifyLayerName(*this, getLayer());
}

LogicalResult ScaledMatmulOp::verify() {
  RankedTensorType a = getA().getType(), b = getB().getType();
  if (isa<Float8E5M2Type>(a.getElementType()) &&
      isa<Float8E5M2Type>(b.getElementType()))
    return emitOpError("both operands are f8E5M2, which FP8 tensor cores do "
                       "not multiply; quantize one of them (the forward "
                       "operand) to f8E4M3FN");
  FailureOr<SmallVector<int64_t>> expected = verifyMatmulShapes(
      *this, a.getShape(), b.getShape(), getTransposeA(), getTransposeB());
  if (failed(expected))
    return failure();
  RankedTensorType result = getResult().getType();
  if (!shapesCompatible(*expected, result.getShape()))
    return emitOpError() << "result shape " << shapeString(result.getShape())
                         << " does not match the product's "
                         << shapeString(*expected);
  if (result.getElementType().isF16())
    return emitOpError("writes bf16 or f32, got f16");
  return verifyLayerName(*this, getLayer());
}

LogicalResult StateOp::verify() {
  // I64Attr getters return uint64_t; compare as signed.
  int64_t history = getHistory();
  if (history < 1)
    return emitOpError() << "state @" << getSymName()
                         << " needs an amax history of at least 1, got "
                         << history;
  return verifyLayerName(*this, getLayer());
}

LogicalResult StateScaleOp::verify() { return success(); }
LogicalResult
StateScaleOp::verifySymbolUses(SymbolTableCollection &symbols) {
  return verifyStateUse(*this, getStateAttr(), symbols);
}

LogicalResult StateUpdateOp::verify() { return success(); }
LogicalResult
StateUpdateOp::verifySymbolUses(SymbolTableCollection &symbols) {
  return verifyStateUse(*this, getStateAttr(), symbols);
}
