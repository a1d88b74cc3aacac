// Gradient rules of the gpt ops (GradientOpInterface). Each rule builds the
// backward of one op from gpt ops; the matmul rule also tags its GEMMs with
// their role so precision policies can tell the three GEMMs of a layer apart.
#include "dialects/gpt/GptDialect.h"

using namespace mlir;
using namespace gptc::gpt;

namespace {

RankedTensorType rankedType(Value v) {
  return llvm::cast<RankedTensorType>(v.getType());
}

RankedTensorType f32Tensor(MLIRContext *context, ArrayRef<int64_t> shape) {
  return RankedTensorType::get(shape, Float32Type::get(context));
}

/// Recreates `op` with `extra` results appended (its training form), moves
/// the uses of the old results over and erases it.
Operation *withSavedResults(Operation *op, OpBuilder &builder,
                            ArrayRef<Type> extra) {
  OpBuilder::InsertionGuard guard(builder);
  builder.setInsertionPoint(op);
  OperationState state(op->getLoc(), op->getName());
  state.addOperands(op->getOperands());
  state.addTypes(op->getResultTypes());
  state.addTypes(extra);
  state.addAttributes(op->getAttrs());
  Operation *replacement = builder.create(state);
  for (auto [from, to] : llvm::zip(op->getResults(), replacement->getResults()))
    from.replaceAllUsesWith(to);
  op->erase();
  return replacement;
}

/// [d0, ..., dn-2, dn-1] -> [d0 * ... * dn-2, dn-1] (dynamic if any is).
RankedTensorType flattenLeading(RankedTensorType type) {
  int64_t rows = 1;
  for (int64_t d : type.getShape().drop_back())
    rows = ShapedType::isDynamic(d) || ShapedType::isDynamic(rows)
               ? ShapedType::kDynamic
               : rows * d;
  return RankedTensorType::get({rows, type.getShape().back()},
                               type.getElementType());
}

Value flatten(OpBuilder &b, Location loc, StringRef layer, Value v) {
  RankedTensorType type = rankedType(v);
  if (type.getRank() == 2)
    return v;
  return ReshapeOp::create(b, loc, flattenLeading(type), layer, v);
}

/// op(x) op(y) with the result shape derived from the operands. Backward
/// GEMMs record which operand is the incoming gradient (`gpt.grad_operand`),
/// so precision policies can give it the gradient format (E5M2).
Value buildMatmul(OpBuilder &b, Location loc, StringRef layer, Value x, Value y,
                  bool tx, bool ty, GemmRole role, Value grad) {
  RankedTensorType xt = rankedType(x), yt = rankedType(y);
  SmallVector<int64_t> shape(xt.getShape().drop_back(2));
  int64_t m = xt.getShape()[xt.getRank() - (tx ? 1 : 2)];
  int64_t n = yt.getShape()[yt.getRank() - (ty ? 2 : 1)];
  shape.append({m, n});
  auto op = MatmulOp::create(b, loc,
                             RankedTensorType::get(shape, xt.getElementType()),
                             layer, x, y, /*bias=*/Value(), tx, ty, role);
  op->setAttr("gpt.grad_operand", b.getI64IntegerAttr(grad == x ? 0 : 1));
  return op;
}

} // namespace

//===----------------------------------------------------------------------===//
// Ops with nothing to differentiate or plain data movement
//===----------------------------------------------------------------------===//

LogicalResult ArangeOp::buildGradient(OpBuilder &, ArrayRef<Value>,
                                      SmallVectorImpl<Value> &) {
  return success();
}

LogicalResult EmbeddingOp::buildGradient(OpBuilder &b, ArrayRef<Value> grads,
                                         SmallVectorImpl<Value> &operandGrads) {
  Value tableGrad = EmbeddingGradOp::create(b, getLoc(), getTable().getType(),
                                            getLayer(), grads[0], getIds());
  operandGrads.append({tableGrad, Value()});
  return success();
}

LogicalResult ReshapeOp::buildGradient(OpBuilder &b, ArrayRef<Value> grads,
                                       SmallVectorImpl<Value> &operandGrads) {
  operandGrads.push_back(ReshapeOp::create(b, getLoc(), getInput().getType(),
                                           getLayer(), grads[0]));
  return success();
}

LogicalResult TransposeOp::buildGradient(OpBuilder &b, ArrayRef<Value> grads,
                                         SmallVectorImpl<Value> &operandGrads) {
  SmallVector<int64_t> inverse(getPerm().size());
  for (auto [i, p] : llvm::enumerate(getPerm()))
    inverse[p] = i;
  operandGrads.push_back(TransposeOp::create(
      b, getLoc(), getInput().getType(), getLayer(), grads[0], inverse));
  return success();
}

LogicalResult SplitOp::buildGradient(OpBuilder &b, ArrayRef<Value> grads,
                                     SmallVectorImpl<Value> &operandGrads) {
  SmallVector<Value> parts;
  for (auto [i, resultGrad] : llvm::enumerate(grads)) {
    Value grad = resultGrad;
    if (!grad) {
      RankedTensorType type = rankedType(getResult(i));
      if (!type.hasStaticShape())
        return emitOpError() << "result #" << i
                             << " is unused, so it has no gradient, and its "
                                "dynamic shape leaves no way to build zeros; "
                                "use every part of the split";
      grad = FillOp::create(b, getLoc(), type, getLayer(),
                            llvm::APFloat(0.0));
    }
    parts.push_back(grad);
  }
  operandGrads.push_back(ConcatOp::create(b, getLoc(), getInput().getType(),
                                          getLayer(), parts, getAxis()));
  return success();
}

LogicalResult ConcatOp::buildGradient(OpBuilder &b, ArrayRef<Value> grads,
                                      SmallVectorImpl<Value> &operandGrads) {
  Type first = getInputs().front().getType();
  if (!llvm::all_of(getInputs().getTypes(), [&](Type t) { return t == first; }))
    return emitOpError("has no gradient rule for parts of different sizes; "
                       "concatenate equal parts");
  SmallVector<Type> types(getInputs().size(), first);
  auto split = SplitOp::create(b, getLoc(), types, getLayer(), grads[0],
                               getAxis());
  operandGrads.append(split.getResults().begin(), split.getResults().end());
  return success();
}

//===----------------------------------------------------------------------===//
// Elementwise
//===----------------------------------------------------------------------===//

LogicalResult AddOp::buildGradient(OpBuilder &b, ArrayRef<Value> grads,
                                   SmallVectorImpl<Value> &operandGrads) {
  Value rhsGrad = grads[0];
  if (getRhs().getType() != getLhs().getType())
    rhsGrad = ReduceLeadingOp::create(b, getLoc(), getRhs().getType(),
                                      getLayer(), grads[0]);
  operandGrads.append({grads[0], rhsGrad});
  return success();
}

LogicalResult MulOp::buildGradient(OpBuilder &b, ArrayRef<Value> grads,
                                   SmallVectorImpl<Value> &operandGrads) {
  operandGrads.push_back(MulOp::create(b, getLoc(), getType(), getLayer(),
                                       grads[0], getScale()));
  return success();
}

LogicalResult GeluOp::buildGradient(OpBuilder &b, ArrayRef<Value> grads,
                                    SmallVectorImpl<Value> &operandGrads) {
  operandGrads.push_back(GeluGradOp::create(b, getLoc(), getType(), getLayer(),
                                            grads[0], getInput()));
  return success();
}

//===----------------------------------------------------------------------===//
// Matmul: dA = dC op(B)^T, dB = op(A)^T dC, each put back in its layout
//===----------------------------------------------------------------------===//

LogicalResult MatmulOp::buildGradient(OpBuilder &b, ArrayRef<Value> grads,
                                      SmallVectorImpl<Value> &operandGrads) {
  Location loc = getLoc();
  StringRef layer = getLayer();
  Value dc = grads[0], a = getA(), w = getB();
  bool ta = getTransposeA(), tb = getTransposeB();
  RankedTensorType aType = rankedType(a), bType = rankedType(w);
  Value da, db;
  if (bType.getRank() == 2 && aType.getRank() > 2) {
    // A weight broadcast over a's batch dimensions: its gradient sums over
    // them, which is one GEMM over the flattened rows.
    if (ta)
      return emitOpError("has no gradient rule for transpose_a with a "
                         "broadcast 2-D b; flatten a first");
    da = buildMatmul(b, loc, layer, dc, w, false, !tb, GemmRole::GradInput, dc);
    Value a2 = flatten(b, loc, layer, a), dc2 = flatten(b, loc, layer, dc);
    db = tb ? buildMatmul(b, loc, layer, dc2, a2, true, false,
                          GemmRole::GradWeight, dc2)
            : buildMatmul(b, loc, layer, a2, dc2, true, false,
                          GemmRole::GradWeight, dc2);
  } else {
    da = ta ? buildMatmul(b, loc, layer, w, dc, tb, true, GemmRole::GradInput,
                          dc)
            : buildMatmul(b, loc, layer, dc, w, false, !tb, GemmRole::GradInput,
                          dc);
    db = tb ? buildMatmul(b, loc, layer, dc, a, true, ta, GemmRole::GradWeight,
                          dc)
            : buildMatmul(b, loc, layer, a, dc, !ta, false,
                          GemmRole::GradWeight, dc);
  }
  operandGrads.append({da, db});
  if (Value bias = getBias())
    operandGrads.push_back(
        ReduceLeadingOp::create(b, loc, bias.getType(), layer, dc));
  return success();
}

//===----------------------------------------------------------------------===//
// Ops whose training form saves statistics
//===----------------------------------------------------------------------===//

Operation *LayerNormOp::materializeSavedValues(OpBuilder &b) {
  if (!getStats().empty())
    return getOperation();
  Type stat = f32Tensor(getContext(), getInput().getType().getShape().drop_back());
  return withSavedResults(getOperation(), b, {stat, stat});
}

LogicalResult LayerNormOp::buildGradient(OpBuilder &b, ArrayRef<Value> grads,
                                         SmallVectorImpl<Value> &operandGrads) {
  if (getStats().size() != 2)
    return emitOpError("needs its training form (with mean and rstd) to be "
                       "differentiated; call materializeSavedValues first");
  auto grad = LayerNormGradOp::create(
      b, getLoc(),
      TypeRange{getInput().getType(), getWeight().getType(),
                getBias().getType()},
      getLayer(), grads[0], getInput(), getWeight(), getStats()[0],
      getStats()[1]);
  operandGrads.append(grad->getResults().begin(), grad->getResults().end());
  return success();
}

Operation *AttentionOp::materializeSavedValues(OpBuilder &b) {
  if (!getLse().empty())
    return getOperation();
  ArrayRef<int64_t> shape = getQ().getType().getShape();
  int64_t heads = getHeads();
  Type lse = f32Tensor(getContext(), {shape[0], heads, shape[1]});
  return withSavedResults(getOperation(), b, {lse});
}

LogicalResult AttentionOp::buildGradient(OpBuilder &b, ArrayRef<Value> grads,
                                         SmallVectorImpl<Value> &operandGrads) {
  if (getLse().size() != 1)
    return emitOpError("needs its training form (with the log-sum-exp) to be "
                       "differentiated; call materializeSavedValues first");
  Type type = getQ().getType();
  auto grad = AttentionGradOp::create(
      b, getLoc(), TypeRange{type, type, type}, getLayer(), grads[0], getQ(),
      getK(), getV(), getAttended(), getLse()[0], getHeads(), getCausal());
  operandGrads.append(grad->getResults().begin(), grad->getResults().end());
  return success();
}

Operation *CrossEntropyOp::materializeSavedValues(OpBuilder &b) {
  if (!getLse().empty())
    return getOperation();
  Type lse = f32Tensor(getContext(), getLogits().getType().getShape().drop_back());
  return withSavedResults(getOperation(), b, {lse});
}

LogicalResult CrossEntropyOp::buildGradient(OpBuilder &b, ArrayRef<Value> grads,
                                            SmallVectorImpl<Value> &operandGrads) {
  if (getLse().size() != 1)
    return emitOpError("needs its training form (with the log-sum-exp) to be "
                       "differentiated; call materializeSavedValues first");
  Value logitsGrad = CrossEntropyGradOp::create(
      b, getLoc(), getLogits().getType(), getLayer(), grads[0], getLogits(),
      getTargets(), getLse()[0], getVocabSize(), getIgnoreIndex());
  operandGrads.append({logitsGrad, Value()});
  return success();
}
