// The fp8 dialect: explicit FP8 scale computation and scaled GEMMs, as the
// precision passes insert them. Element types are MLIR's builtin f8E4M3FN
// (max 448) and f8E5M2 (max 57344). Verifiers live in Fp8Ops.cpp.
#ifndef GPTC_DIALECTS_FP8_OPS_TD
#define GPTC_DIALECTS_FP8_OPS_TD

include "mlir/IR/OpBase.td"
include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/EnumAttr.td"
include "dialects/common/DoubleParameter.td"
include "mlir/IR/SymbolInterfaces.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

def Fp8_Dialect : Dialect {
  let name = "fp8";
  let cppNamespace = "::gptc::fp8";
  let summary = "FP8 scaling: amax, scales, quantize, scaled matmul, delayed-scaling state";
  let description = [{
    Scale computation is explicit IR: `fp8.amax` reduces a tensor to its
    largest magnitude, `fp8.scale_from_amax` turns it into a scale with a
    recipe (`scale = fp8_max / max(amax, eps)`, optionally reduced by
    `2^margin` and rounded down to a power of two), `fp8.quantize` multiplies
    by the scale and rounds to nearest even with saturation, and
    `fp8.scaled_matmul` multiplies two FP8 operands and divides by both
    scales. `fp8.state` holds the amax history of delayed scaling.
  }];
  let useDefaultAttributePrinterParser = 1;
}

def Fp8_Format : I32EnumAttr<"Format", "an FP8 encoding", [
    I32EnumAttrCase<"E4M3", 0, "e4m3">,
    I32EnumAttrCase<"E5M2", 1, "e5m2">]> {
  let cppNamespace = "::gptc::fp8";
  let genSpecializedAttr = 0;
}

def Fp8_AmaxReduction : I32EnumAttr<"AmaxReduction",
    "how delayed scaling reduces the amax history to one value", [
    I32EnumAttrCase<"Max", 0, "max">,
    I32EnumAttrCase<"MostRecent", 1, "most_recent">]> {
  let cppNamespace = "::gptc::fp8";
}

def Fp8_RecipeAttr : AttrDef<Fp8_Dialect, "Recipe"> {
  let mnemonic = "recipe";
  let summary = "how a scale is computed from an amax";
  let description = [{
    `scale = fp8_max(format) / max(amax, eps) / 2^margin`, rounded down to a
    power of two when `power_of_two` is true. `eps` defaults to 1e-12.

    ```mlir
    #fp8.recipe<format = e4m3>
    #fp8.recipe<format = e5m2, margin = 1, power_of_two = true, eps = 1.0e-10>
    ```
  }];
  let parameters = (ins EnumParameter<Fp8_Format>:$format,
                        DefaultValuedParameter<"int64_t", "0">:$margin,
                        OptionalParameter<"::mlir::BoolAttr">:$power_of_two,
                        Gptc_DoubleParameter<"floor of amax", "1.0e-12">:$eps);
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    /// Largest finite value of the recipe's format (448 or 57344).
    double getFormatMax() const;
    bool isPowerOfTwo() const { return getPowerOfTwo() && getPowerOfTwo().getValue(); }
  }];
}

def Fp8_AnyFp8 : AnyTypeOf<[F8E4M3FN, F8E5M2]>;
def Fp8_Fp8Tensor : RankedTensorOf<[F8E4M3FN, F8E5M2]>;
def Fp8_HighTensor : RankedTensorOf<[F32, BF16, F16]>;
def Fp8_ScalarF32 : 0DTensorOf<[F32]> {
  let builderCall = "::mlir::RankedTensorType::get({}, $_builder.getF32Type())";
}

class Fp8_Op<string mnemonic, list<Trait> traits = []>
    : Op<Fp8_Dialect, mnemonic, traits> {
  let hasVerifier = 1;
}

def Fp8_AmaxOp : Fp8_Op<"amax", [Pure]> {
  let summary = "largest absolute value of a tensor (NaN if any element is NaN)";
  let arguments = (ins StrAttr:$layer, Fp8_HighTensor:$input);
  let results = (outs Fp8_ScalarF32:$result);
  let assemblyFormat = "$layer $input attr-dict `:` type($input)";
}

def Fp8_ScaleFromAmaxOp : Fp8_Op<"scale_from_amax", [Pure]> {
  let summary = "scale = fp8_max / max(amax, eps), per the recipe";
  let arguments = (ins StrAttr:$layer, Fp8_ScalarF32:$amax,
                       Fp8_RecipeAttr:$recipe);
  let results = (outs Fp8_ScalarF32:$result);
  let assemblyFormat = "$layer $amax `recipe` $recipe attr-dict";
}

def Fp8_QuantizeOp : Fp8_Op<"quantize", [Pure]> {
  let summary = "x * scale, rounded to nearest even and saturated to the FP8 range";
  let description = [{
    With `transpose` (2-D inputs only) the codes are written transposed,
    `result[c][r] = fp8(input[r][c] * scale)`: fp8-transpose-casts sets it
    where an FP8 GEMM would otherwise read the operand in the layout
    Hopper's tensor cores cannot take, so the runtime need not transpose it.
  }];
  let arguments = (ins StrAttr:$layer, Fp8_HighTensor:$input,
                       Fp8_ScalarF32:$scale, UnitAttr:$transpose);
  let results = (outs RankedTensorOf<[AnyType]>:$result);
  let assemblyFormat = [{
    $layer $input `,` $scale (`transpose` $transpose^)? attr-dict `:`
    type($input) `->` type($result)
  }];
}

def Fp8_DequantizeOp : Fp8_Op<"dequantize", [Pure]> {
  let summary = "q / scale, back to a wider float type";
  let arguments = (ins StrAttr:$layer, RankedTensorOf<[AnyType]>:$input,
                       Fp8_ScalarF32:$scale);
  let results = (outs Fp8_HighTensor:$result);
  let assemblyFormat = [{
    $layer $input `,` $scale attr-dict `:` type($input) `->` type($result)
  }];
}

def Fp8_Axis : I32EnumAttr<"Axis",
    "which way a rowwise scale vector runs over a tensor seen as rows x last dim", [
    I32EnumAttrCase<"Rows", 0, "rows">,
    I32EnumAttrCase<"Cols", 1, "cols">]> {
  let cppNamespace = "::gptc::fp8";
}

def Fp8_F32Vector : 1DTensorOf<[F32]>;

def Fp8_AmaxRowsOp : Fp8_Op<"amax_rows", [Pure]> {
  let summary = "largest absolute value of each row (or column) of a tensor";
  let description = [{
    The input seen as rows x last dim: `along rows` gives one amax per row
    (reducing the last dim), `along cols` one per column. Rowwise FP8
    scaling takes them along the GEMM's non-contracted dimension: M for
    operand a, N for operand b. NaN in a row makes that row's amax NaN.
  }];
  let arguments = (ins StrAttr:$layer, Fp8_HighTensor:$input,
                       Fp8_Axis:$along);
  let results = (outs Fp8_F32Vector:$result);
  let assemblyFormat = [{
    $layer $input `along` $along attr-dict `:` type($input) `->` type($result)
  }];
}

def Fp8_RowScalesOp : Fp8_Op<"row_scales", [Pure,
    AllTypesMatch<["amax", "result"]>]> {
  let summary = "scale_from_amax for each entry of a vector of amaxes";
  let arguments = (ins StrAttr:$layer, Fp8_F32Vector:$amax,
                       Fp8_RecipeAttr:$recipe);
  let results = (outs Fp8_F32Vector:$result);
  let assemblyFormat = [{
    $layer $amax `recipe` $recipe attr-dict `:` type($amax)
  }];
}

def Fp8_QuantizeRowsOp : Fp8_Op<"quantize_rows", [Pure]> {
  let summary = "x * scale of its row (or column), rounded and saturated to FP8";
  let description = [{
    As `fp8.quantize`, with one scale per row (`along rows`) or per column
    (`along cols`) of the input seen as rows x last dim. With `transpose`
    (2-D inputs only) the codes are written transposed, each still scaled
    by its input row's (or column's) scale.
  }];
  let arguments = (ins StrAttr:$layer, Fp8_HighTensor:$input,
                       Fp8_F32Vector:$scales, Fp8_Axis:$along,
                       UnitAttr:$transpose);
  let results = (outs Fp8_Fp8Tensor:$result);
  let assemblyFormat = [{
    $layer $input `,` $scales `along` $along (`transpose` $transpose^)?
    attr-dict `:` type($input) `,` type($scales) `->` type($result)
  }];
}

def Fp8_ScaledMatmulOp : Fp8_Op<"scaled_matmul", [Pure]> {
  let summary = "op(a) x op(b) / (a_scale * b_scale) on FP8 operands";
  let description = [{
    Both operands are FP8 and at most one is E5M2 (Hopper has no E5M2 x E5M2
    GEMM): E4M3 x E4M3 in the forward pass, E5M2 gradients x E4M3 in the
    backward ("hybrid"). The product accumulates in f32 and is written as
    bf16 or f32. With a second result the op also returns the amax of its
    output (cuBLASLt's AMAX_D epilogue), so the next quantization needs no
    separate reduction. Shapes follow gpt.matmul.

    `fast_accum` lets the GPU accumulate as Hopper's FP8 tensor cores do
    natively, without promoting partial sums to full f32 at intervals:
    faster, a little less accurate. TransformerEngine and torchao use it in
    the forward GEMMs only; the backward's gradients keep the precise
    ("split") accumulation. The CPU's emulation accumulates in f32 either
    way.
  }];
  let arguments = (ins StrAttr:$layer, Fp8_Fp8Tensor:$a, Fp8_Fp8Tensor:$b,
                       RankedTensorOf<[F32]>:$a_scale,
                       RankedTensorOf<[F32]>:$b_scale,
                       UnitAttr:$transpose_a, UnitAttr:$transpose_b,
                       UnitAttr:$fast_accum);
  let results = (outs Fp8_HighTensor:$result, Optional<Fp8_ScalarF32>:$amax);
  // Scales are tensor<f32> (per tensor) unless `row_scales(...)` gives
  // vectors: a's one per row of op(a) (M), b's one per column of op(b) (N).
  let assemblyFormat = [{
    $layer $a `,` $b `scales` `(` $a_scale `,` $b_scale `)`
    custom<ScaleTypes>(type($a_scale), type($b_scale))
    (`transpose_a` $transpose_a^)? (`transpose_b` $transpose_b^)?
    (`fast_accum` $fast_accum^)? attr-dict
    `:` type($a) `,` type($b) `->` type(results)
  }];
}

def Fp8_StateOp : Fp8_Op<"state", [Symbol]> {
  let summary = "persistent delayed-scaling state: amax history and current scale";
  let description = [{
    One per scaled tensor under delayed scaling. The history holds the last
    `history` amaxes; each step the scale is computed from the history
    (reduced by `reduction`) with `recipe`. A non-finite amax keeps the
    previous scale. The state is part of checkpoints.
  }];
  let arguments = (ins SymbolNameAttr:$sym_name, StrAttr:$layer,
                       I64Attr:$history, Fp8_AmaxReduction:$reduction,
                       Fp8_RecipeAttr:$recipe);
  let assemblyFormat = [{
    $sym_name $layer `history` `=` $history `reduction` `=` $reduction
    `recipe` `=` $recipe attr-dict
  }];
}

def Fp8_StateScaleOp : Fp8_Op<"state_scale", [
    DeclareOpInterfaceMethods<SymbolUserOpInterface>,
    MemoryEffects<[MemRead]>]> {
  let summary = "reads the current scale of an fp8.state";
  let arguments = (ins FlatSymbolRefAttr:$state);
  let results = (outs Fp8_ScalarF32:$result);
  let assemblyFormat = "$state attr-dict";
}

def Fp8_StateUpdateOp : Fp8_Op<"state_update", [
    DeclareOpInterfaceMethods<SymbolUserOpInterface>,
    MemoryEffects<[MemRead, MemWrite]>]> {
  let summary = "records this step's amax in an fp8.state's history";
  let arguments = (ins FlatSymbolRefAttr:$state, Fp8_ScalarF32:$amax);
  let assemblyFormat = "$state `,` $amax attr-dict";
}

def Fp8_FusedOp : Fp8_Op<"fused", [SingleBlock, RecursiveMemoryEffects]> {
  let summary = "a producer whose kernel also computes its output's amax (and FP8 cast)";
  let description = [{
    Made by fp8-fuse-amax and fp8-fuse-cast. The body holds exactly one
    producer op (a layernorm, gelu, add, GEMM or storage cast) and an
    `fp8.yield` of its results. The fused op returns those results, then
    the amax of the first one -- computed by the producer's kernel as it
    writes its output, instead of by a separate pass over the tensor --
    and, when `scale` is given (delayed scaling, where the scale is known
    before the producer runs), the first result quantized with it:
    `fp8(x * scale)`, in the format of the last result type. With
    `transpose` that cast also transposes the output, flattened to
    rows x last-dim, so the FP8 GEMM gets the K-contiguous operand Hopper
    needs ("TN") from the same kernel.

    ```mlir
    %y, %amax = fp8.fused "h.0.mlp.fc" {
      %g = gpt.gelu "h.0.mlp" %x : tensor<256x512xf32>
      fp8.yield %g : tensor<256x512xf32>
    } : tensor<256x512xf32>, tensor<f32>
    ```
  }];
  let arguments = (ins StrAttr:$layer, Optional<Fp8_ScalarF32>:$scale,
                       UnitAttr:$transpose);
  let results = (outs Variadic<AnyRankedTensor>:$results);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = [{
    $layer (`scale` `(` $scale^ `)`)? (`transpose` $transpose^)? $body
    attr-dict `:` type($results)
  }];
  let extraClassDeclaration = [{
    /// The one op of the body whose kernel is fused.
    ::mlir::Operation *getProducer() { return &getBody().front().front(); }
    unsigned getNumProducerResults() { return getProducer()->getNumResults(); }
    /// amax of the producer's first result.
    ::mlir::Value getAmax() { return getResults()[getNumProducerResults()]; }
    /// The FP8 cast of the producer's first result; null without a scale.
    ::mlir::Value getQuantized() {
      return getScale() ? getResults()[getNumProducerResults() + 1]
                        : ::mlir::Value();
    }
  }];
}

def Fp8_YieldOp : Fp8_Op<"yield", [Pure, Terminator, HasParent<"FusedOp">]> {
  let summary = "the producer results an fp8.fused returns";
  let arguments = (ins Variadic<AnyRankedTensor>:$values);
  let assemblyFormat = "$values attr-dict `:` type($values)";
}

#endif // GPTC_DIALECTS_FP8_OPS_TD
