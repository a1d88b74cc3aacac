// gpt-autodiff: turns the model's @forward into the train_step, eval_step
// and logits entry points (see Passes.td for the contract).
#include "compiler/transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/Transforms/RegionUtils.h"
#include "llvm/ADT/BitVector.h"
#include "llvm/ADT/StringSet.h"

namespace gptc {
#define GEN_PASS_DEF_GPTAUTODIFF
#include "compiler/transforms/Passes.h.inc"
} // namespace gptc

using namespace mlir;
using namespace gptc;
using namespace gptc::gpt;

namespace {

constexpr StringLiteral kOutputAttr = "gpt.output";

/// Index of the @forward result tagged gpt.output = `name`, if any.
std::optional<unsigned> findOutput(func::FuncOp forward, StringRef name) {
  for (unsigned i = 0; i < forward.getNumResults(); ++i)
    if (auto tag = forward.getResultAttrOfType<StringAttr>(i, kOutputAttr))
      if (tag.getValue() == name)
        return i;
  return std::nullopt;
}

/// Erases ops whose results are unused and that have no side effects; one
/// reverse sweep suffices because users come after what they use.
void eraseDeadOps(Block &block) {
  for (Operation &op : llvm::make_early_inc_range(llvm::reverse(block)))
    if (isOpTriviallyDead(&op))
      op.erase();
}

StringRef layerOf(Value value) {
  if (Operation *def = value.getDefiningOp())
    if (auto layer = def->getAttrOfType<StringAttr>("layer"))
      return layer.getValue();
  return "input";
}

class GptAutodiffPass : public gptc::impl::GptAutodiffBase<GptAutodiffPass> {
public:
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    // recompute names forward ops (gelu, layernorm, ...): a name that is no
    // gpt op would silently recompute nothing.
    for (const std::string &name : recompute)
      if (!RegisteredOperationName::lookup("gpt." + name, &getContext())) {
        module.emitError() << "gpt-autodiff recompute='" << name
                           << "' names no gpt op; list forward ops by name, "
                              "e.g. recompute=gelu,layernorm";
        return signalPassFailure();
      }
    auto forward = module.lookupSymbol<func::FuncOp>("forward");
    if (!forward) {
      module.emitError("has no @forward function; gpt-autodiff differentiates "
                       "the model's @forward (generate one with gpt-model)");
      return signalPassFailure();
    }
    std::optional<unsigned> loss = findOutput(forward, "loss");
    std::optional<unsigned> logits = findOutput(forward, "logits");
    if (!loss) {
      forward.emitError("has no result tagged {gpt.output = \"loss\"}; the "
                        "loss is what train_step differentiates");
      return signalPassFailure();
    }
    if (forward.getResultTypes()[*loss] !=
        RankedTensorType::get({}, Float32Type::get(&getContext()))) {
      forward.emitError() << "loss result must be tensor<f32>, got "
                          << forward.getResultTypes()[*loss];
      return signalPassFailure();
    }

    func::FuncOp train = makeEntry(forward, "train_step", *loss);
    makeEntry(forward, "eval_step", *loss);
    if (logits)
      makeEntry(forward, "logits", *logits);
    forward.erase();
    if (failed(buildBackward(train)))
      return signalPassFailure();
  }

private:
  /// A copy of @forward named `name` that returns only result `index`, with
  /// the ops and arguments that no longer matter removed.
  func::FuncOp makeEntry(func::FuncOp forward, StringRef name, unsigned index) {
    OpBuilder builder(forward);
    builder.setInsertionPointToEnd(getOperation().getBody());
    auto entry = cast<func::FuncOp>(builder.clone(*forward));
    entry.setName(name);
    Block &body = entry.front();
    auto ret = cast<func::ReturnOp>(body.getTerminator());
    Value kept = ret.getOperand(index);
    DictionaryAttr keptAttrs = entry.getResultAttrDict(index);
    builder.setInsertionPoint(ret);
    func::ReturnOp::create(builder, ret.getLoc(), kept);
    ret.erase();
    entry.setType(FunctionType::get(&getContext(), body.getArgumentTypes(),
                                    {kept.getType()}));
    entry.setAllResultAttrs(ArrayRef<DictionaryAttr>{keptAttrs});
    eraseDeadOps(body);
    llvm::BitVector unused(body.getNumArguments());
    for (BlockArgument arg : body.getArguments())
      unused[arg.getArgNumber()] = arg.use_empty();
    (void)entry.eraseArguments(unused);
    return entry;
  }

  /// The parameter whose gradient buffer receives `param`'s gradient.
  FlatSymbolRefAttr gradientTarget(StringRef param) {
    auto op = getOperation().lookupSymbol<ParamOp>(param);
    if (std::optional<StringRef> tied = op.getTiedTo())
      return FlatSymbolRefAttr::get(&getContext(), *tied);
    return FlatSymbolRefAttr::get(&getContext(), param);
  }

  LogicalResult buildBackward(func::FuncOp train) {
    Block &body = train.front();
    auto ret = cast<func::ReturnOp>(body.getTerminator());
    OpBuilder builder(train);

    // The training form first: ops that save statistics now return them.
    for (Operation &op : llvm::make_early_inc_range(body.without_terminator()))
      if (auto grad = dyn_cast<GradientOpInterface>(op))
        grad.materializeSavedValues(builder);

    SmallVector<Operation *> forwardOps;
    for (Operation &op : body.without_terminator())
      forwardOps.push_back(&op);

    Value loss = ret.getOperand(0);
    builder.setInsertionPoint(ret);
    DenseMap<Value, Value> grads;
    // The seed is the runtime's loss scale, 1 / accumulation steps: the
    // gradient summed over micro-steps is then the mean, as one big batch.
    grads[loss] =
        StepScalarOp::create(builder, loss.getLoc(), StepScalarKind::LossScale);

    for (Operation *op : llvm::reverse(forwardOps)) {
      if (auto ref = dyn_cast<ParamRefOp>(op)) {
        // Every use of the parameter is differentiated by now.
        if (Value grad = grads.lookup(ref.getResult()))
          AccumulateGradOp::create(builder, ref.getLoc(),
                                   gradientTarget(ref.getParam()), grad);
        continue;
      }
      auto differentiable = dyn_cast<GradientOpInterface>(op);
      if (!differentiable)
        continue;
      SmallVector<Value> resultGrads;
      for (Value result : op->getResults())
        resultGrads.push_back(grads.lookup(result));
      if (llvm::all_of(resultGrads, [](Value v) { return !v; }))
        continue;
      SmallVector<Value> operandGrads;
      if (failed(differentiable.buildGradient(builder, resultGrads,
                                              operandGrads)))
        return failure();
      if (operandGrads.size() != op->getNumOperands())
        return op->emitOpError()
               << "gradient rule gave " << operandGrads.size()
               << " gradients for " << op->getNumOperands() << " operands";
      for (auto [operand, grad] : llvm::zip(op->getOperands(), operandGrads)) {
        if (!grad)
          continue;
        Value &sum = grads[operand];
        sum = sum ? AddOp::create(builder, grad.getLoc(), sum.getType(),
                                  layerOf(operand), sum, grad)
                  : grad;
      }
    }

    recomputeInBackward(body, forwardOps);
    eraseDeadOps(body);
    return success();
  }

  /// Clones each forward op named in the recompute option in front of its
  /// first backward user, which then reads the clone: the forward result
  /// dies at its last forward use instead of living through the backward.
  void recomputeInBackward(Block &body, ArrayRef<Operation *> forwardOps) {
    llvm::StringSet<> names;
    for (const std::string &name : recompute)
      names.insert(name);
    if (names.empty())
      return;
    Operation *lastForward = forwardOps.back();
    for (Operation *op : forwardOps) {
      if (!names.contains(op->getName().stripDialect()))
        continue;
      SmallVector<OpOperand *> backwardUses;
      Operation *firstUser = nullptr;
      for (OpResult result : op->getResults())
        for (OpOperand &use : result.getUses()) {
          Operation *user = use.getOwner();
          if (!lastForward->isBeforeInBlock(user) || isa<func::ReturnOp>(user))
            continue;
          backwardUses.push_back(&use);
          if (!firstUser || user->isBeforeInBlock(firstUser))
            firstUser = user;
        }
      if (backwardUses.empty())
        continue;
      OpBuilder builder(firstUser);
      Operation *clone = builder.clone(*op);
      for (OpOperand *use : backwardUses)
        use->set(clone->getResult(cast<OpResult>(use->get()).getResultNumber()));
    }
  }
};

} // namespace
