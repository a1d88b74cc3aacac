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

/// A cast's result has the input's shape, or with `transpose` (2-D inputs
/// only) the input's shape swapped.
LogicalResult verifyCastLayout(Operation *op, RankedTensorType input,
                               RankedTensorType result, bool transpose) {
  if (!transpose)
    return verifyCastShapes(op, input, result);
  if (input.getRank() != 2)
    return op->emitOpError() << "transposes only 2-D inputs, got "
                             << shapeString(input.getShape())
                             << "; reshape it to rows x columns first";
  int64_t rows = input.getShape()[0], cols = input.getShape()[1];
  if (!shapesCompatible(result.getShape(), {cols, rows}))
    return op->emitOpError()
           << "with transpose has result shape "
           << shapeString(result.getShape()) << ", expected "
           << shapeString({cols, rows}) << " (the input's shape swapped)";
  return success();
}

LogicalResult verifyStateUse(Operation *op, FlatSymbolRefAttr state,
                             SymbolTableCollection &symbols) {
  if (!symbols.lookupNearestSymbolFrom<StateOp>(op, state))
    return op->emitOpError() << "refers to " << state
                             << ", which is not an fp8.state in this module";
  return success();
}

/// Rows and columns of a tensor seen as rows x last dim.
std::pair<int64_t, int64_t> rowsAndCols(RankedTensorType type) {
  if (type.getRank() == 0)
    return {1, 1};
  int64_t cols = type.getShape().back();
  return {cols == 0 ? 0 : type.getNumElements() / cols, cols};
}

/// A rowwise scale vector runs along `along` of `input`: its length must be
/// the number of rows or of columns.
LogicalResult verifyAlong(Operation *op, RankedTensorType input, Axis along,
                          RankedTensorType vector, StringRef what) {
  if (input.getRank() < 1)
    return op->emitOpError("needs an input of rank >= 1 for rowwise scaling");
  auto [rows, cols] = rowsAndCols(input);
  int64_t expected = along == Axis::Rows ? rows : cols;
  if (vector.getShape()[0] != expected)
    return op->emitOpError()
           << what << " has " << vector.getShape()[0] << " entries, expected "
           << expected << " (one per " << (along == Axis::Rows ? "row" : "column")
           << " of " << shapeString(input.getShape())
           << " seen as rows x last dim)";
  return success();
}

} // namespace

/// Scale types of fp8.scaled_matmul: nothing for two tensor<f32>, else
/// `row_scales(type, type)`.
static ParseResult parseScaleTypes(OpAsmParser &parser, Type &a, Type &b) {
  Type scalar = RankedTensorType::get({}, parser.getBuilder().getF32Type());
  a = b = scalar;
  if (failed(parser.parseOptionalKeyword("row_scales")))
    return success();
  return failure(parser.parseLParen() || parser.parseType(a) ||
                 parser.parseComma() || parser.parseType(b) ||
                 parser.parseRParen());
}

static void printScaleTypes(OpAsmPrinter &p, Operation *, Type a, Type b) {
  if (cast<RankedTensorType>(a).getRank() == 0 &&
      cast<RankedTensorType>(b).getRank() == 0)
    return;
  p << "row_scales(" << a << ", " << b << ")";
}

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
  if (failed(verifyCastLayout(*this, getInput().getType(), result,
                              getTranspose())))
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
  // Per-tensor scales are scalars; rowwise ones have one entry per row of
  // the result (M, all batches) for a, one per column (N) for b.
  auto sa = cast<RankedTensorType>(getAScale().getType());
  auto sb = cast<RankedTensorType>(getBScale().getType());
  auto [rows, cols] = rowsAndCols(result);
  if (sa.getRank() > 1 || (sa.getRank() == 1 && sa.getShape()[0] != rows))
    return emitOpError() << "a_scale has type " << sa
                         << ", expected tensor<f32> or tensor<" << rows
                         << "xf32> (one scale per row of the result)";
  if (sb.getRank() > 1 || (sb.getRank() == 1 && sb.getShape()[0] != cols))
    return emitOpError() << "b_scale has type " << sb
                         << ", expected tensor<f32> or tensor<" << cols
                         << "xf32> (one scale per column of the result)";
  if (sb.getRank() == 1 && b.getRank() > 2)
    return emitOpError("takes rowwise b scales only for a 2-D b (a weight); "
                       "a batched b needs per-tensor scales");
  return verifyLayerName(*this, getLayer());
}

LogicalResult AmaxRowsOp::verify() {
  if (failed(verifyAlong(*this, getInput().getType(), getAlong(),
                         getType(), "result")))
    return failure();
  return verifyLayerName(*this, getLayer());
}

LogicalResult RowScalesOp::verify() { return verifyLayerName(*this, getLayer()); }

LogicalResult QuantizeRowsOp::verify() {
  RankedTensorType result = getType();
  if (failed(verifyCastLayout(*this, getInput().getType(), result,
                              getTranspose())) ||
      failed(verifyAlong(*this, getInput().getType(), getAlong(),
                         getScales().getType(), "scales")))
    return failure();
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

LogicalResult FusedOp::verify() {
  if (failed(verifyLayerName(*this, getLayer())))
    return failure();
  Block &body = getBody().front();
  auto yield = dyn_cast<YieldOp>(body.back());
  if (body.getOperations().size() != 2 || !yield)
    return emitOpError("needs a body of exactly one producer op and an "
                       "fp8.yield of its results");
  Operation *producer = getProducer();
  if (yield.getValues() != ValueRange(producer->getResults()))
    return emitOpError("must yield the producer's results, in order");
  unsigned n = producer->getNumResults();
  unsigned expected = n + 1 + (getScale() ? 1 : 0);
  if (n == 0 || getNumResults() != expected)
    return emitOpError() << "returns " << getNumResults()
                         << " results, expected " << expected
                         << ": the producer's " << n
                         << ", its first result's amax"
                         << (getScale() ? " and its FP8 cast" : "");
  for (unsigned i = 0; i < n; ++i)
    if (getResult(i).getType() != producer->getResult(i).getType())
      return emitOpError() << "result #" << i << " has type "
                           << getResult(i).getType()
                           << ", expected the producer's "
                           << producer->getResult(i).getType();
  auto first = cast<RankedTensorType>(producer->getResult(0).getType());
  if (!first.getElementType().isF32() && !first.getElementType().isBF16())
    return emitOpError() << "fuses an amax over " << first.getElementType()
                         << ", expected an f32 or bf16 first result";
  auto amax = cast<RankedTensorType>(getAmax().getType());
  if (amax.getRank() != 0 || !amax.getElementType().isF32())
    return emitOpError() << "amax result has type " << amax
                         << ", expected tensor<f32>";
  if (!getScale()) {
    if (getTranspose())
      return emitOpError("transposes the FP8 cast, but has no scale and so "
                         "no cast");
    return success();
  }
  auto q = cast<RankedTensorType>(getQuantized().getType());
  if (!isFp8(q.getElementType()))
    return emitOpError() << "casts to " << q.getElementType()
                         << ", expected f8E4M3FN or f8E5M2";
  // The cast sees the first result as rows x last dim; untransposed it may
  // be viewed in any shape with that last dim (a reshape of the same rows).
  int64_t cols = first.getShape().back(), rows = first.getNumElements() / cols;
  if (getTranspose()) {
    SmallVector<int64_t> shape{cols, rows};
    if (q.getShape() != ArrayRef<int64_t>(shape))
      return emitOpError() << "FP8 result shape " << shapeString(q.getShape())
                           << " must be " << shapeString(shape)
                           << " (the first result flattened to rows x last "
                              "dim, transposed)";
    return success();
  }
  if (q.getShape().empty() || q.getShape().back() != cols ||
      q.getNumElements() != first.getNumElements())
    return emitOpError() << "FP8 result shape " << shapeString(q.getShape())
                         << " must hold the first result's " << rows << " x "
                         << cols << " values with the same last dim";
  return success();
}

LogicalResult YieldOp::verify() { return success(); }
