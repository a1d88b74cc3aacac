// gpt-optimizer: appends @optimizer_step (see Passes.td for the contract).
#include "compiler/transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"

namespace gptc {
#define GEN_PASS_DEF_GPTOPTIMIZER
#include "compiler/transforms/Passes.h.inc"
} // namespace gptc

using namespace mlir;
using namespace gptc::gpt;

namespace {

class GptOptimizerPass
    : public gptc::impl::GptOptimizerBase<GptOptimizerPass> {
public:
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (module.lookupSymbol("optimizer_step")) {
      module.emitError("already has an @optimizer_step; run gpt-optimizer "
                       "once");
      return signalPassFailure();
    }
    auto params = module.getOps<ParamOp>();
    if (params.empty()) {
      module.emitError("has no gpt.param to optimize");
      return signalPassFailure();
    }

    MLIRContext *context = &getContext();
    OpBuilder builder(context);
    builder.setInsertionPointToEnd(module.getBody());
    Location loc = NameLoc::get(StringAttr::get(context, "optimizer"));
    Type scalar = RankedTensorType::get({}, Float32Type::get(context));
    auto func = func::FuncOp::create(builder, loc, "optimizer_step",
                                     FunctionType::get(context, {}, {scalar}));
    func.setResultAttr(0, "gpt.output", builder.getStringAttr("grad_norm"));
    builder.setInsertionPointToEnd(func.addEntryBlock());

    Value norm = GradNormOp::create(builder, loc);
    Value gradScale = ClipScaleOp::create(builder, loc, norm,
                                          llvm::APFloat(double(maxGradNorm)));
    Value lr = StepScalarOp::create(builder, loc, StepScalarKind::LearningRate);
    Value step = StepScalarOp::create(builder, loc, StepScalarKind::Step);
    for (ParamOp param : params) {
      if (param.getTiedTo())
        continue;
      double decay = param.getTensorType().getRank() >= 2 ? weightDecay : 0.0;
      AdamWOp::create(builder, param.getLoc(), param.getSymName(), lr, step,
                      gradScale, llvm::APFloat(double(beta1)),
                      llvm::APFloat(double(beta2)), llvm::APFloat(double(eps)),
                      llvm::APFloat(decay));
    }
    ZeroGradsOp::create(builder, loc);
    func::ReturnOp::create(builder, loc, norm);
  }
};

} // namespace
