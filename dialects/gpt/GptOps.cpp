// Verifiers of the gpt dialect's ops. Each error names the value, what was
// expected and what was found.
#include "dialects/common/MatmulShape.h"
#include "dialects/common/ShapeChecks.h"
#include "dialects/gpt/GptDialect.h"

#include "mlir/IR/TypeUtilities.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/Support/MathExtras.h"

#include <algorithm>

using namespace mlir;
using namespace gptc;
using namespace gptc::gpt;

namespace {

RankedTensorType rankedType(Value v) {
  return llvm::cast<RankedTensorType>(v.getType());
}

LogicalResult verifyLayerName(Operation *op, StringRef layer) {
  if (layer.empty())
    return op->emitOpError("needs the name of the layer it belongs to (e.g. "
                           "\"h.3.mlp.fc\"), got an empty string");
  return success();
}

LogicalResult verifySameElementType(Operation *op, Type a, Type b,
                                    StringRef what) {
  if (getElementTypeOrSelf(a) != getElementTypeOrSelf(b))
    return op->emitOpError() << what << " element type "
                             << getElementTypeOrSelf(b) << " differs from "
                             << getElementTypeOrSelf(a);
  return success();
}

/// Element types of two operands (or an operand and a result) of an op
/// whose kernel computes in f32: equal, or f32 and bf16 storage mixed (as
/// gpt-bf16-kernels makes them: a bf16 operand is widened as it is read, a
/// bf16 result rounded once as it is written).
LogicalResult verifyStorageElementType(Operation *op, Type a, Type b,
                                       StringRef what) {
  Type ea = getElementTypeOrSelf(a), eb = getElementTypeOrSelf(b);
  auto storage = [](Type t) { return t.isF32() || t.isBF16(); };
  if (ea == eb || (storage(ea) && storage(eb)))
    return success();
  return op->emitOpError() << what << " element type " << eb << " differs from "
                           << ea << "; only f32 and bf16 storage may mix";
}

/// The values a training-form op saves for its backward: none, or `count`
/// f32 tensors of `shape`.
LogicalResult verifyRowStats(Operation *op, ValueRange stats, size_t count,
                             ArrayRef<int64_t> shape, StringRef what) {
  if (stats.empty())
    return success();
  if (stats.size() != count)
    return op->emitOpError() << "saves " << what << ": expected " << count
                             << " extra result(s), got " << stats.size();
  for (Value stat : stats)
    if (!shapesCompatible(rankedType(stat).getShape(), shape))
      return op->emitOpError() << "saves " << what << " of shape "
                               << shapeString(shape) << ", got "
                               << shapeString(rankedType(stat).getShape());
  return success();
}

} // namespace

// Custom assembly of the ops whose operands may mix f32 and bf16 storage
// (gpt-bf16-kernels): a type is printed only where it differs from the
// input's, so the common all-one-type form reads as before.

// `T` when the result's type is T as well, `T -> R` when it is R.
static ParseResult parseStorageResult(OpAsmParser &parser, Type &input,
                                      Type &result) {
  if (parser.parseType(input))
    return failure();
  result = input;
  if (succeeded(parser.parseOptionalArrow()))
    return parser.parseType(result);
  return success();
}

static void printStorageResult(OpAsmPrinter &printer, Operation *, Type input,
                               Type result) {
  printer << input;
  if (result != input)
    printer << " -> " << result;
}

// The input's type, then `, G` for result_grad's and `-> D` for
// input_grad's where they differ from it.
static ParseResult parseGeluGradTypes(OpAsmParser &parser, Type &input,
                                      Type &resultGrad, Type &inputGrad) {
  if (parser.parseType(input))
    return failure();
  resultGrad = inputGrad = input;
  if (succeeded(parser.parseOptionalComma()) && parser.parseType(resultGrad))
    return failure();
  if (succeeded(parser.parseOptionalArrow()))
    return parser.parseType(inputGrad);
  return success();
}

static void printGeluGradTypes(OpAsmPrinter &printer, Operation *, Type input,
                               Type resultGrad, Type inputGrad) {
  printer << input;
  if (resultGrad != input)
    printer << ", " << resultGrad;
  if (inputGrad != input)
    printer << " -> " << inputGrad;
}

// The most bytes one tensor may take: far beyond any accelerator or host,
// and far enough below 2^63 that sums and offsets of many such tensors
// (arenas, the micro-batch's multiples) cannot overflow an int64.
constexpr int64_t kMaxTensorBytes = int64_t(1) << 48;

LogicalResult gptc::gpt::verifyTensorSizes(Operation *op) {
  auto check = [&](Type type, StringRef role, unsigned index) -> LogicalResult {
    auto shaped = dyn_cast<ShapedType>(type);
    if (!shaped || !shaped.hasRank())
      return success();
    Type element = shaped.getElementType();
    const unsigned bits =
        element.isIntOrFloat() ? element.getIntOrFloatBitWidth() : 64;
    int64_t bytes = std::max<int64_t>(1, (bits + 7) / 8);
    for (int64_t dim : shaped.getShape()) {
      if (ShapedType::isDynamic(dim))
        continue;
      if (dim <= 0)
        return op->emitOpError()
               << role << " " << index << " has shape "
               << shapeString(shaped.getShape())
               << ": every dimension must be positive; check the model's "
                  "widths, heads, sequence length and vocabulary";
      if (llvm::MulOverflow(bytes, dim, bytes) || bytes > kMaxTensorBytes)
        return op->emitOpError()
               << role << " " << index << " has shape "
               << shapeString(shaped.getShape()) << " of "
               << shaped.getElementType()
               << ": more than 2^48 bytes (256 TiB), which no machine "
                  "holds and gptc does not plan; make the model (or the "
                  "micro-batch) smaller";
    }
    return success();
  };
  for (auto [index, type] : llvm::enumerate(op->getOperandTypes()))
    if (failed(check(type, "operand", index)))
      return failure();
  for (auto [index, type] : llvm::enumerate(op->getResultTypes()))
    if (failed(check(type, "result", index)))
      return failure();
  return success();
}

#define GET_OP_CLASSES
#include "dialects/gpt/GptOps.cpp.inc"

//===----------------------------------------------------------------------===//
// ParamOp / ParamRefOp
//===----------------------------------------------------------------------===//

LogicalResult ParamOp::verify() {
  RankedTensorType type = getTensorType();
  if (!type.hasStaticShape())
    return emitOpError() << "parameter @" << getSymName()
                         << " needs a static shape, got "
                         << shapeString(type.getShape());
  if (!isa<FloatType>(type.getElementType()))
    return emitOpError() << "parameter @" << getSymName()
                         << " needs a float element type, got "
                         << type.getElementType();
  int64_t elements = 1;
  for (int64_t dim : type.getShape())
    if (dim <= 0 || llvm::MulOverflow(elements, dim, elements) ||
        elements > kMaxTensorBytes / 4)
      return emitOpError() << "parameter @" << getSymName() << " has shape "
                           << shapeString(type.getShape())
                           << ": every dimension must be positive and its "
                              "f32 values at most 2^48 bytes; check the "
                              "model's widths and vocabulary";
  if (getInit().has_value() == getTiedTo().has_value())
    return emitOpError() << "parameter @" << getSymName()
                         << " needs exactly one of an initialiser (init "
                            "<normal, std = 0.02>, <zeros>, <ones>) or "
                            "tied_to @other";
  if (std::optional<int64_t> rows = getRealRows()) {
    int64_t allRows = type.getRank() ? type.getDimSize(0) : 1;
    if (*rows <= 0 || *rows > allRows)
      return emitOpError() << "parameter @" << getSymName() << " has real_rows "
                           << *rows << ", expected 1.." << allRows
                           << " (its first dimension)";
  }
  return verifyLayerName(*this, getLayer());
}

LogicalResult ParamOp::verifySymbolUses(SymbolTableCollection &symbols) {
  std::optional<StringRef> tied = getTiedTo();
  if (!tied)
    return success();
  if (*tied == getSymName())
    return emitOpError() << "parameter @" << getSymName()
                         << " is tied to itself";
  auto target = symbols.lookupNearestSymbolFrom<ParamOp>(
      *this, StringAttr::get(getContext(), *tied));
  if (!target)
    return emitOpError() << "parameter @" << getSymName() << " is tied to @"
                         << *tied << ", which is not a gpt.param";
  if (target.getTiedTo())
    return emitOpError() << "parameter @" << getSymName() << " is tied to @"
                         << *tied << ", which is itself tied to @"
                         << *target.getTiedTo() << "; tie to @"
                         << *target.getTiedTo() << " directly";
  if (target.getType() != getType())
    return emitOpError() << "parameter @" << getSymName() << " has type "
                         << getType() << " but is tied to @" << *tied
                         << " of type " << target.getType();
  return success();
}

int64_t ParamOp::getNumRealElements() {
  RankedTensorType type = getTensorType();
  int64_t all = type.getNumElements();
  std::optional<int64_t> rows = getRealRows();
  if (!rows || type.getRank() == 0)
    return all;
  return all / type.getDimSize(0) * *rows;
}

LogicalResult ParamRefOp::verifySymbolUses(SymbolTableCollection &symbols) {
  auto param = symbols.lookupNearestSymbolFrom<ParamOp>(*this, getParamAttr());
  if (!param)
    return emitOpError() << "refers to @" << getParam()
                         << ", which is not a gpt.param in this module";
  if (param.getType() != getType())
    return emitOpError() << "reads @" << getParam() << " as " << getType()
                         << " but the parameter is declared "
                         << param.getType();
  return success();
}

//===----------------------------------------------------------------------===//
// Compute ops
//===----------------------------------------------------------------------===//

LogicalResult ArangeOp::verify() {
  RankedTensorType type = getType();
  if (type.isDynamicDim(0) || type.getDimSize(0) <= 0)
    return emitOpError() << "needs a static, positive length, got "
                         << shapeString(type.getShape());
  return verifyLayerName(*this, getLayer());
}

LogicalResult EmbeddingOp::verify() {
  RankedTensorType table = rankedType(getTable());
  RankedTensorType ids = rankedType(getIds());
  if (table.getRank() != 2)
    return emitOpError() << "table must be 2-D [rows, width], got "
                         << shapeString(table.getShape());
  SmallVector<int64_t> expected(ids.getShape());
  expected.push_back(table.getDimSize(1));
  if (!shapesCompatible(expected, getType().getShape()))
    return emitOpError() << "result shape " << shapeString(getType().getShape())
                         << " does not match ids shape + table width "
                         << shapeString(expected);
  if (failed(verifySameElementType(*this, table, getType(), "result")))
    return failure();
  return verifyLayerName(*this, getLayer());
}

LogicalResult LayerNormOp::verify() {
  RankedTensorType input = rankedType(getInput());
  if (input.getRank() < 1)
    return emitOpError("input must have at least one dimension");
  int64_t width = input.getShape().back();
  for (auto [name, value] : {std::pair<StringRef, Value>{"weight", getWeight()},
                             {"bias", getBias()}}) {
    RankedTensorType type = rankedType(value);
    if (type.getRank() != 1 || !dimsCompatible(type.getDimSize(0), width))
      return emitOpError() << name << " must be 1-D of the input width ["
                           << width << "], got " << shapeString(type.getShape());
  }
  auto normalized = cast<RankedTensorType>(getNormalized().getType());
  if (normalized.getShape() != input.getShape())
    return emitOpError() << "result shape " << shapeString(normalized.getShape())
                         << " must equal the input shape "
                         << shapeString(input.getShape());
  if (failed(verifyStorageElementType(*this, input, normalized, "result")))
    return failure();
  if (failed(verifyRowStats(*this, getStats(), 2, input.getShape().drop_back(),
                            "the mean and rstd of each row")))
    return failure();
  if (!(getEps().convertToFloat() > 0.0f))
    return emitOpError() << "eps must be positive, got "
                         << getEps().convertToFloat();
  return verifyLayerName(*this, getLayer());
}

LogicalResult MatmulOp::verify() {
  RankedTensorType a = rankedType(getA());
  RankedTensorType b = rankedType(getB());
  FailureOr<SmallVector<int64_t>> expected = verifyMatmulShapes(
      *this, a.getShape(), b.getShape(), getTransposeA(), getTransposeB());
  if (failed(expected))
    return failure();
  if (!shapesCompatible(*expected, getType().getShape()))
    return emitOpError() << "result shape " << shapeString(getType().getShape())
                         << " does not match the product's "
                         << shapeString(*expected);
  if (Value bias = getBias()) {
    int64_t n = expected->back();
    RankedTensorType biasType = rankedType(bias);
    if (biasType.getRank() != 1 || !dimsCompatible(biasType.getDimSize(0), n))
      return emitOpError() << "bias must be 1-D of the output width [" << n
                           << "], got " << shapeString(biasType.getShape());
  }
  if (failed(verifySameElementType(*this, a, b, "b")))
    return failure();
  // bf16 operands may accumulate into an f32 result (gpt-bf16-gemm).
  bool widening = a.getElementType().isBF16() && getType().getElementType().isF32();
  if (!widening && failed(verifySameElementType(*this, a, getType(), "result")))
    return failure();
  return verifyLayerName(*this, getLayer());
}

LogicalResult AddOp::verify() {
  RankedTensorType lhs = rankedType(getLhs());
  RankedTensorType rhs = rankedType(getRhs());
  if (rhs.getRank() > lhs.getRank() ||
      !shapesCompatible(lhs.getShape().take_back(rhs.getRank()),
                        rhs.getShape()))
    return emitOpError() << "rhs shape " << shapeString(rhs.getShape())
                         << " must equal lhs shape "
                         << shapeString(lhs.getShape())
                         << " or a suffix of it (broadcast over leading "
                            "dimensions)";
  if (getType().getShape() != lhs.getShape())
    return emitOpError() << "result shape " << shapeString(getType().getShape())
                         << " must equal the lhs shape "
                         << shapeString(lhs.getShape());
  if (failed(verifyStorageElementType(*this, lhs, getType(), "result")) ||
      failed(verifyStorageElementType(*this, lhs, rhs, "rhs")))
    return failure();
  return verifyLayerName(*this, getLayer());
}

LogicalResult MulOp::verify() {
  if (!std::isfinite(getScale().convertToDouble()))
    return emitOpError("scale must be a finite number");
  return verifyLayerName(*this, getLayer());
}

LogicalResult GeluOp::verify() {
  if (failed(verifyStorageElementType(*this, getInput().getType(), getType(),
                                      "result")))
    return failure();
  return verifyLayerName(*this, getLayer());
}

LogicalResult SplitOp::verify() {
  RankedTensorType input = rankedType(getInput());
  int64_t axis = getAxis(), parts = getResults().size();
  if (axis < 0 || axis >= input.getRank())
    return emitOpError() << "axis " << axis << " is out of range for a "
                         << input.getRank() << "-D input";
  if (parts < 2)
    return emitOpError() << "needs at least 2 results, got " << parts;
  int64_t size = input.getDimSize(axis);
  if (!ShapedType::isDynamic(size) && size % parts != 0)
    return emitOpError() << "dimension " << axis << " of size " << size
                         << " does not split into " << parts << " equal parts";
  SmallVector<int64_t> expected(input.getShape());
  expected[axis] = ShapedType::isDynamic(size) ? size : size / parts;
  for (Value result : getResults()) {
    RankedTensorType type = rankedType(result);
    if (!shapesCompatible(expected, type.getShape()))
      return emitOpError() << "each result must have shape "
                           << shapeString(expected) << ", got "
                           << shapeString(type.getShape());
    if (failed(verifySameElementType(*this, input, type, "result")))
      return failure();
    // Parts of a dynamic dimension are still equal: the first static size
    // fixes the others.
    if (ShapedType::isDynamic(expected[axis]))
      expected[axis] = type.getDimSize(axis);
  }
  return verifyLayerName(*this, getLayer());
}

LogicalResult ConcatOp::verify() {
  RankedTensorType result = getType();
  int64_t axis = getAxis();
  if (axis < 0 || axis >= result.getRank())
    return emitOpError() << "axis " << axis << " is out of range for a "
                         << result.getRank() << "-D result";
  if (getInputs().empty())
    return emitOpError("needs at least one input");
  int64_t total = 0;
  for (Value input : getInputs()) {
    RankedTensorType type = rankedType(input);
    SmallVector<int64_t> expected(result.getShape());
    expected[axis] = type.getRank() == result.getRank()
                         ? type.getDimSize(axis)
                         : ShapedType::kDynamic;
    if (!shapesCompatible(expected, type.getShape()))
      return emitOpError() << "input shape " << shapeString(type.getShape())
                           << " must match the result "
                           << shapeString(result.getShape())
                           << " in every dimension but " << axis;
    if (failed(verifySameElementType(*this, result, type, "input")))
      return failure();
    int64_t size = type.getDimSize(axis);
    total = (ShapedType::isDynamic(size) || ShapedType::isDynamic(total))
                ? ShapedType::kDynamic
                : total + size;
  }
  if (!dimsCompatible(total, result.getDimSize(axis)))
    return emitOpError() << "result dimension " << axis << " is "
                         << result.getDimSize(axis)
                         << " but the inputs add up to " << total;
  return verifyLayerName(*this, getLayer());
}

int64_t AttentionOp::getHeadDim() {
  return getAttended().getType().getShape().back() /
         static_cast<int64_t>(getHeads());
}

LogicalResult AttentionOp::verify() {
  RankedTensorType type = getAttended().getType();
  if (type.getRank() != 3)
    return emitOpError() << "q, k, v must be [batch, seq, width], got "
                         << shapeString(type.getShape());
  int64_t width = type.getDimSize(2);
  if (ShapedType::isDynamic(width) || ShapedType::isDynamic(type.getDimSize(1)))
    return emitOpError("sequence length and width must be static");
  // I64Attr getters return uint64_t; compare as signed.
  int64_t heads = getHeads();
  if (heads <= 0)
    return emitOpError() << "heads must be positive, got " << heads;
  if (width % heads != 0)
    return emitOpError() << "head count " << heads
                         << " does not divide the width " << width
                         << "; pick a head count that divides it";
  int64_t lseShape[] = {type.getDimSize(0), heads, type.getDimSize(1)};
  if (failed(verifyRowStats(*this, getLse(), 1, lseShape,
                            "the log-sum-exp of each query")))
    return failure();
  return verifyLayerName(*this, getLayer());
}

LogicalResult ReshapeOp::verify() {
  RankedTensorType input = rankedType(getInput());
  RankedTensorType result = getType();
  bool inStatic = input.hasStaticShape(), outStatic = result.hasStaticShape();
  if (inStatic && outStatic &&
      input.getNumElements() != result.getNumElements())
    return emitOpError() << "cannot reshape " << shapeString(input.getShape())
                         << " (" << input.getNumElements() << " elements) to "
                         << shapeString(result.getShape()) << " ("
                         << result.getNumElements() << " elements)";
  if (inStatic != outStatic)
    return emitOpError() << "a dynamic dimension must stay dynamic: "
                         << shapeString(input.getShape()) << " -> "
                         << shapeString(result.getShape());
  if (failed(verifySameElementType(*this, input, result, "result")))
    return failure();
  return verifyLayerName(*this, getLayer());
}

LogicalResult TransposeOp::verify() {
  RankedTensorType input = rankedType(getInput());
  ArrayRef<int64_t> perm = getPerm();
  int64_t rank = input.getRank();
  SmallVector<bool> seen(rank, false);
  if (static_cast<int64_t>(perm.size()) != rank)
    return emitOpError() << "perm has " << perm.size()
                         << " entries, expected one per input dimension ("
                         << rank << ")";
  SmallVector<int64_t> expected;
  for (int64_t p : perm) {
    if (p < 0 || p >= rank || seen[p])
      return emitOpError() << "perm must be a permutation of 0.." << rank - 1
                           << ", got " << shapeString(perm);
    seen[p] = true;
    expected.push_back(input.getDimSize(p));
  }
  if (!shapesCompatible(expected, getType().getShape()))
    return emitOpError() << "result shape " << shapeString(getType().getShape())
                         << " does not match the permuted input "
                         << shapeString(expected);
  if (failed(verifySameElementType(*this, input, getType(), "result")))
    return failure();
  return verifyLayerName(*this, getLayer());
}

LogicalResult CrossEntropyOp::verify() {
  RankedTensorType logits = rankedType(getLogits());
  RankedTensorType targets = rankedType(getTargets());
  if (logits.getRank() < 2)
    return emitOpError() << "logits must be [..., vocab], got "
                         << shapeString(logits.getShape());
  if (!shapesCompatible(logits.getShape().drop_back(), targets.getShape()))
    return emitOpError() << "targets shape " << shapeString(targets.getShape())
                         << " must equal the logits shape without the vocab "
                            "dimension "
                         << shapeString(logits.getShape().drop_back());
  int64_t padded = logits.getShape().back();
  int64_t vocab = getVocabSize();
  if (vocab <= 0 || (!ShapedType::isDynamic(padded) && vocab > padded))
    return emitOpError() << "vocab_size " << vocab << " must be in 1.."
                         << (ShapedType::isDynamic(padded)
                                 ? std::string("?")
                                 : std::to_string(padded))
                         << " (the logits width)";
  int64_t ignore = getIgnoreIndex();
  if (ignore >= 0 && ignore < vocab)
    return emitOpError() << "ignore_index " << ignore
                         << " is a real token id (vocab_size " << vocab
                         << "); use a negative value such as -1";
  if (failed(verifyRowStats(*this, getLse(), 1, logits.getShape().drop_back(),
                            "the log-sum-exp of each row")))
    return failure();
  return verifyLayerName(*this, getLayer());
}

//===----------------------------------------------------------------------===//
// Ops of the backward graph
//===----------------------------------------------------------------------===//

LogicalResult CastOp::verify() {
  RankedTensorType input = rankedType(getInput());
  if (!shapesCompatible(input.getShape(), getType().getShape()))
    return emitOpError() << "result shape " << shapeString(getType().getShape())
                         << " must equal the input shape "
                         << shapeString(input.getShape());
  if (input.getElementType() == getType().getElementType())
    return emitOpError() << "casts " << input.getElementType()
                         << " to itself; drop the cast";
  return verifyLayerName(*this, getLayer());
}

LogicalResult FillOp::verify() {
  if (!std::isfinite(getValue().convertToDouble()))
    return emitOpError("value must be a finite number");
  if (!getType().hasStaticShape())
    return emitOpError() << "needs a static shape, got "
                         << shapeString(getType().getShape());
  return verifyLayerName(*this, getLayer());
}

LogicalResult ReduceLeadingOp::verify() {
  RankedTensorType input = rankedType(getInput());
  RankedTensorType result = getType();
  if (result.getRank() > input.getRank() ||
      !shapesCompatible(input.getShape().take_back(result.getRank()),
                        result.getShape()))
    return emitOpError() << "result shape " << shapeString(result.getShape())
                         << " must be a suffix of the input shape "
                         << shapeString(input.getShape());
  if (failed(verifyStorageElementType(*this, input, result, "result")))
    return failure();
  return verifyLayerName(*this, getLayer());
}

LogicalResult LayerNormGradOp::verify() {
  RankedTensorType input = rankedType(getInput());
  // As gpt.layernorm; the row shape below drops the last dimension.
  if (input.getRank() < 1)
    return emitOpError("input must have at least one dimension");
  for (Value v : {getResultGrad(), getInputGrad()})
    if (rankedType(v).getShape() != input.getShape())
      return emitOpError() << "result_grad and input_grad must have the input "
                              "shape "
                           << shapeString(input.getShape()) << ", got "
                           << shapeString(rankedType(v).getShape());
  if (failed(verifyStorageElementType(*this, input, getResultGrad().getType(),
                                      "result_grad")) ||
      failed(verifyStorageElementType(*this, input, getInputGrad().getType(),
                                      "input_grad")) ||
      failed(verifyStorageElementType(*this, getWeight().getType(),
                                      getWeightGrad().getType(),
                                      "weight_grad")) ||
      failed(verifyStorageElementType(*this, getWeight().getType(),
                                      getBiasGrad().getType(), "bias_grad")))
    return failure();
  for (Value v : {getWeight(), getWeightGrad(), getBiasGrad()})
    if (!shapesCompatible(rankedType(v).getShape(),
                          input.getShape().take_back()))
      return emitOpError() << "weight and its gradients must be 1-D of the "
                              "input width, got "
                           << shapeString(rankedType(v).getShape());
  for (Value v : {getMean(), getRstd()})
    if (!shapesCompatible(rankedType(v).getShape(),
                          input.getShape().drop_back()))
      return emitOpError() << "mean and rstd must have one entry per row "
                           << shapeString(input.getShape().drop_back())
                           << ", got "
                           << shapeString(rankedType(v).getShape());
  return verifyLayerName(*this, getLayer());
}

LogicalResult GeluGradOp::verify() {
  Type input = getInput().getType();
  if (failed(verifyStorageElementType(*this, input,
                                      getResultGrad().getType(),
                                      "result_grad")) ||
      failed(verifyStorageElementType(*this, input, getType(), "input_grad")))
    return failure();
  return verifyLayerName(*this, getLayer());
}

LogicalResult AttentionGradOp::verify() {
  RankedTensorType type = rankedType(getQ());
  if (type.getRank() != 3)
    return emitOpError() << "q, k, v must be [batch, seq, width], got "
                         << shapeString(type.getShape());
  // As gpt.attention (a dynamic width would print as a huge negative size).
  if (type.isDynamicDim(1) || type.isDynamicDim(2))
    return emitOpError("sequence length and width must be static");
  int64_t heads = getHeads();
  if (heads <= 0 || type.getDimSize(2) % heads != 0)
    return emitOpError() << "head count " << heads
                         << " must be positive and divide the width "
                         << type.getDimSize(2);
  int64_t lseShape[] = {type.getDimSize(0), heads, type.getDimSize(1)};
  if (!shapesCompatible(rankedType(getLse()).getShape(), lseShape))
    return emitOpError() << "lse must be [batch, heads, seq] "
                         << shapeString(lseShape) << ", got "
                         << shapeString(rankedType(getLse()).getShape());
  return verifyLayerName(*this, getLayer());
}

LogicalResult CrossEntropyGradOp::verify() {
  RankedTensorType logits = rankedType(getLogits());
  // As gpt.cross_entropy; the row shape below drops the last dimension.
  if (logits.getRank() < 2)
    return emitOpError() << "logits must be [..., vocab], got "
                         << shapeString(logits.getShape());
  ArrayRef<int64_t> rows = logits.getShape().drop_back();
  if (!shapesCompatible(rankedType(getTargets()).getShape(), rows) ||
      !shapesCompatible(rankedType(getLse()).getShape(), rows))
    return emitOpError() << "targets and lse must have one entry per row "
                         << shapeString(rows);
  if (getLogitsGrad().getType() != logits)
    return emitOpError() << "logits_grad must have the logits type " << logits;
  int64_t vocab = getVocabSize();
  if (vocab <= 0 || (!ShapedType::isDynamic(logits.getShape().back()) &&
                     vocab > logits.getShape().back()))
    return emitOpError() << "vocab_size " << vocab
                         << " must be in 1..(the logits width)";
  // As gpt.cross_entropy: an ignore_index that is a real token would zero the
  // gradient of every row that predicts it.
  int64_t ignore = getIgnoreIndex();
  if (ignore >= 0 && ignore < vocab)
    return emitOpError() << "ignore_index " << ignore
                         << " is a real token id (vocab_size " << vocab
                         << "); use a negative value such as -1";
  return verifyLayerName(*this, getLayer());
}

LogicalResult EmbeddingGradOp::verify() {
  RankedTensorType table = getType();
  RankedTensorType grad = rankedType(getResultGrad());
  if (table.getRank() != 2 || !table.hasStaticShape())
    return emitOpError() << "table_grad must be a static [rows, width], got "
                         << shapeString(table.getShape());
  SmallVector<int64_t> expected(rankedType(getIds()).getShape());
  expected.push_back(table.getDimSize(1));
  if (!shapesCompatible(expected, grad.getShape()))
    return emitOpError() << "result_grad shape " << shapeString(grad.getShape())
                         << " must be the ids shape + table width "
                         << shapeString(expected);
  return verifyLayerName(*this, getLayer());
}

LogicalResult AccumulateGradOp::verifySymbolUses(SymbolTableCollection &symbols) {
  auto param = symbols.lookupNearestSymbolFrom<ParamOp>(*this, getParamAttr());
  if (!param)
    return emitOpError() << "accumulates into @" << getParam()
                         << ", which is not a gpt.param";
  if (std::optional<StringRef> target = param.getTiedTo())
    return emitOpError() << "accumulates into @" << getParam()
                         << ", which is tied to @" << *target
                         << "; accumulate into @" << *target << " instead";
  // A bf16 gradient (gpt-bf16-kernels) is widened as it is added.
  auto grad = cast<RankedTensorType>(getGrad().getType());
  auto paramType = cast<RankedTensorType>(param.getType());
  bool bf16Grad = grad.getElementType().isBF16() &&
                  paramType.getElementType().isF32() &&
                  grad.getShape() == paramType.getShape();
  if (param.getType() != grad && !bf16Grad)
    return emitOpError() << "gradient type " << grad
                         << " differs from the type of @" << getParam() << " "
                         << param.getType()
                         << " (a bf16 gradient of an f32 parameter is allowed)";
  return success();
}

LogicalResult
GradBucketReadyOp::verifySymbolUses(SymbolTableCollection &symbols) {
  if (getParams().empty())
    return emitOpError() << "bucket " << getBucket()
                         << " names no parameters, expected at least one";
  for (Attribute attr : getParams()) {
    auto ref = cast<FlatSymbolRefAttr>(attr);
    auto param = symbols.lookupNearestSymbolFrom<ParamOp>(*this, ref);
    if (!param)
      return emitOpError() << "bucket " << getBucket() << " names " << ref
                           << ", which is not a gpt.param";
    if (std::optional<StringRef> target = param.getTiedTo())
      return emitOpError() << "bucket " << getBucket() << " names " << ref
                           << ", which is tied to @" << *target
                           << " (its gradient lives there): name @" << *target;
  }
  return success();
}

LogicalResult GradSyncOp::verify() {
  if (static_cast<int64_t>(getBuckets()) < 1)
    return emitOpError() << "waits for " << static_cast<int64_t>(getBuckets())
                         << " buckets, expected at least 1";
  return success();
}

//===----------------------------------------------------------------------===//
// Optimizer
//===----------------------------------------------------------------------===//

LogicalResult ClipScaleOp::verify() {
  if (!std::isfinite(getMaxNorm().convertToDouble()))
    return emitOpError("max_norm must be finite (0 or less disables clipping)");
  return success();
}

LogicalResult AdamWOp::verify() {
  auto inUnitInterval = [](llvm::APFloat v) {
    double d = v.convertToDouble();
    return d >= 0.0 && d < 1.0;
  };
  if (!inUnitInterval(getBeta1()) || !inUnitInterval(getBeta2()))
    return emitOpError() << "beta1 and beta2 must be in [0, 1), got "
                         << getBeta1().convertToDouble() << " and "
                         << getBeta2().convertToDouble();
  if (!(getEps().convertToDouble() > 0.0))
    return emitOpError() << "eps must be positive, got "
                         << getEps().convertToDouble();
  if (getWeightDecay().convertToDouble() < 0.0)
    return emitOpError() << "weight_decay must be >= 0, got "
                         << getWeightDecay().convertToDouble();
  return success();
}

LogicalResult AdamWOp::verifySymbolUses(SymbolTableCollection &symbols) {
  auto param = symbols.lookupNearestSymbolFrom<ParamOp>(*this, getParamAttr());
  if (!param)
    return emitOpError() << "updates @" << getParam()
                         << ", which is not a gpt.param";
  if (std::optional<StringRef> target = param.getTiedTo())
    return emitOpError() << "updates @" << getParam() << ", which is tied to @"
                         << *target << "; update @" << *target << " instead";
  return success();
}
