// The gradient interface: every differentiable gpt op knows its gradient
// rule, so gpt-autodiff is a walk over the graph in reverse.
#ifndef GPTC_DIALECTS_GPT_INTERFACES_TD
#define GPTC_DIALECTS_GPT_INTERFACES_TD

include "mlir/IR/OpBase.td"

def Gpt_GradientOpInterface : OpInterface<"GradientOpInterface"> {
  let cppNamespace = "::gptc::gpt";
  let description = [{
    Builds the gradients of an op's operands from the gradients of its
    results, as gpt ops. Ops whose backward needs values the forward pass can
    save cheaply (layer-norm statistics, attention log-sum-exp) first turn
    into their training form, which returns them as extra results.
  }];
  let methods = [
    InterfaceMethod<[{
        Returns the op in the form its gradient rule needs, creating it next
        to this one (and replacing this one) if it is different.
      }], "::mlir::Operation *", "materializeSavedValues",
      (ins "::mlir::OpBuilder &":$builder), "",
      "return $_op.getOperation();">,
    InterfaceMethod<[{
        Appends one gradient per operand to `operandGrads` (a null Value
        where none flows, e.g. token ids). `resultGrads` has one entry per
        result, null where the result has no gradient.
      }], "::llvm::LogicalResult", "buildGradient",
      (ins "::mlir::OpBuilder &":$builder,
           "::mlir::ArrayRef<::mlir::Value>":$resultGrads,
           "::llvm::SmallVectorImpl<::mlir::Value> &":$operandGrads)>,
  ];
}

#endif // GPTC_DIALECTS_GPT_INTERFACES_TD
