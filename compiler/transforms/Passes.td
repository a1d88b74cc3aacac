// Every gptc pass, one per file in this folder (flags gpt-*, fp8-*, rt-*).
#ifndef GPTC_COMPILER_TRANSFORMS_PASSES_TD
#define GPTC_COMPILER_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

def GptAutodiff : Pass<"gpt-autodiff", "::mlir::ModuleOp"> {
  let summary = "Builds the train_step, eval_step and logits entry points from @forward";
  let description = [{
    Takes the model's `@forward` function, whose results are tagged
    `gpt.output = "loss"` and `gpt.output = "logits"`, and replaces it with:

    - `@train_step(tokens, targets) -> loss`: the forward pass in its
      training form (ops that save statistics for their backward return
      them), then the backward pass built from each op's gradient rule in
      reverse order, ending in `gpt.accumulate_grad` into each parameter's
      persistent gradient buffer. Accumulation is explicit so that several
      micro-steps add up before the optimizer runs; a tied parameter
      accumulates into the parameter it is tied to, so both uses are summed.
      Each accumulation comes right after the last gradient of that
      parameter, as early as the backward allows.
    - `@eval_step(tokens, targets) -> loss`: the forward pass only.
    - `@logits(tokens) -> logits`: the forward pass without the loss.
  }];
  let dependentDialects = ["::gptc::gpt::GptDialect"];
  let options = [
    ListOption<"recompute", "recompute", "std::string",
      "Forward ops to compute again in the backward instead of keeping their "
      "results alive between the two passes, by op name without the dialect "
      "(e.g. recompute=gelu,layernorm). Trades compute for activation memory.">,
  ];
}

#endif // GPTC_COMPILER_TRANSFORMS_PASSES_TD
