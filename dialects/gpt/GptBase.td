// The gpt dialect: the model graph as the DSL writes it (before autodiff,
// precision and bufferization). Precision-agnostic: tensors are f32 here and
// the precision passes decide what is stored and multiplied in bf16 or FP8.
#ifndef GPTC_DIALECTS_GPT_BASE_TD
#define GPTC_DIALECTS_GPT_BASE_TD

include "mlir/IR/OpBase.td"
include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/EnumAttr.td"
include "dialects/common/DoubleParameter.td"

def Gpt_Dialect : Dialect {
  let name = "gpt";
  let cppNamespace = "::gptc::gpt";
  let summary = "GPT-style model graphs: parameters and the ops of the forward pass";
  let description = [{
    Parameters are module-level symbols (`gpt.param`) read inside functions
    with `gpt.param_ref`. Every compute op carries the name of the layer it
    belongs to (`h.3.mlp.fc`), so precision policies and reports can address
    layers by name. Activations have a dynamic leading batch dimension; the
    sequence length and widths are static.
  }];
  let useDefaultAttributePrinterParser = 1;
  // gpt.config on the module: checked against the graph (GptDialect.cpp).
  let hasOperationAttrVerify = 1;
}

def Gpt_InitKind : I32EnumAttr<"InitKind", "how a parameter is initialised", [
    I32EnumAttrCase<"Normal", 0, "normal">,
    I32EnumAttrCase<"Zeros", 1, "zeros">,
    I32EnumAttrCase<"Ones", 2, "ones">]> {
  let cppNamespace = "::gptc::gpt";
  let genSpecializedAttr = 0;
}

def Gpt_InitAttr : AttrDef<Gpt_Dialect, "Init"> {
  let mnemonic = "init";
  let summary = "parameter initialiser: normal(std), zeros or ones";
  let parameters = (ins EnumParameter<Gpt_InitKind>:$kind,
                        Gptc_DoubleParameter<"standard deviation of normal", "0.0">:$std);
  let assemblyFormat = "`<` $kind (`,` `std` `=` $std^)? `>`";
  let genVerifyDecl = 1;
}

#endif // GPTC_DIALECTS_GPT_BASE_TD
