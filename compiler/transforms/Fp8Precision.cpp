// fp8-precision: GEMMs in FP8 with explicit per-tensor scale computation
// (see Passes.td). Numerics: DESIGN.md section 4.
#include "compiler/transforms/Passes.h"

#include "mlir/IR/Builders.h"

namespace gptc {
#define GEN_PASS_DEF_FP8PRECISION
#include "compiler/transforms/Passes.h.inc"
} // namespace gptc

using namespace mlir;
namespace gpt = gptc::gpt;
namespace fp8 = gptc::fp8;

namespace {

/// The GEMM's (M, N, K), or nullopt for a shape the check cannot read.
std::optional<std::array<int64_t, 3>> gemmSizes(gpt::MatmulOp op) {
  auto a = cast<RankedTensorType>(op.getA().getType());
  auto c = cast<RankedTensorType>(op.getType());
  if (!a.hasStaticShape() || !c.hasStaticShape())
    return std::nullopt;
  int64_t n = c.getShape().back();
  int64_t m = c.getNumElements() / n;
  int64_t k = op.getTransposeA() ? a.getShape()[a.getRank() - 2]
                                 : a.getShape().back();
  return std::array<int64_t, 3>{m, n, k};
}

class Fp8PrecisionPass
    : public gptc::impl::Fp8PrecisionBase<Fp8PrecisionPass> {
public:
  using Base::Base;

  void runOnOperation() override {
    if (policy == "bf16")
      return;
    if (policy != "fp8-tensorwise" && policy != "fp8-delayed") {
      getOperation().emitError()
          << "fp8-precision has no policy '" << policy
          << "'; use bf16, fp8-tensorwise or fp8-delayed";
      return signalPassFailure();
    }
    for (auto func : getOperation().getOps<func::FuncOp>()) {
      if (func.getName() == "optimizer_step" || func.isExternal())
        continue;
      SmallVector<gpt::MatmulOp> matmuls(func.getOps<gpt::MatmulOp>());
      for (gpt::MatmulOp op : matmuls)
        rewrite(op);
    }
  }

private:
  bool excluded(StringRef layer) {
    for (const std::string &pattern : exclude) {
      StringRef p(pattern);
      if (p.consume_back("*") ? layer.starts_with(p) : layer == p)
        return true;
    }
    return false;
  }

  /// `value` as FP8 of `format`, and its scale. Tensorwise: amax -> scale
  /// -> quantize, all from this step's tensor. Delayed: the scale comes from
  /// the amax history in the fp8.state `stateName` (created on first use),
  /// and this step's amax is recorded there for the next steps.
  std::pair<Value, Value> quantize(OpBuilder &b, Location loc, StringRef layer,
                                   Value value, fp8::Format format,
                                   StringRef stateName, bool record) {
    MLIRContext *context = &getContext();
    auto type = cast<RankedTensorType>(value.getType());
    Type element = format == fp8::Format::E4M3
                       ? Type(Float8E4M3FNType::get(context))
                       : Type(Float8E5M2Type::get(context));
    Type scalar = RankedTensorType::get({}, Float32Type::get(context));
    auto recipe = fp8::RecipeAttr::get(context, format, /*margin=*/0,
                                       /*power_of_two=*/BoolAttr(),
                                       llvm::APFloat(1e-12));
    Value scale;
    if (policy == "fp8-delayed") {
      declareState(stateName, layer, recipe);
      scale = fp8::StateScaleOp::create(b, loc, scalar, stateName);
      if (record) {
        Value amax = fp8::AmaxOp::create(b, loc, scalar, layer, value);
        fp8::StateUpdateOp::create(b, loc, stateName, amax);
      }
    } else {
      Value amax = fp8::AmaxOp::create(b, loc, scalar, layer, value);
      scale = fp8::ScaleFromAmaxOp::create(b, loc, scalar, layer, amax, recipe);
    }
    Value q = fp8::QuantizeOp::create(
        b, loc, RankedTensorType::get(type.getShape(), element), layer, value,
        scale);
    return {q, scale};
  }

  void declareState(StringRef name, StringRef layer, fp8::RecipeAttr recipe) {
    ModuleOp module = getOperation();
    if (module.lookupSymbol(name))
      return;
    OpBuilder top(module.getBody(), module.getBody()->begin());
    fp8::StateOp::create(top, module.getLoc(), name, layer,
                         static_cast<uint64_t>(historyLength),
                         fp8::AmaxReduction::Max, recipe);
  }

  void rewrite(gpt::MatmulOp op) {
    StringRef layer = op.getLayer();
    if (excluded(layer)) {
      op->setAttr("fp8.skipped", StringAttr::get(&getContext(), "excluded"));
      return;
    }
    std::optional<std::array<int64_t, 3>> sizes = gemmSizes(op);
    if (!sizes || llvm::any_of(*sizes, [](int64_t d) { return d % 16 != 0; })) {
      // FP8 tensor cores need every GEMM dimension to be a multiple of 16.
      op->setAttr("fp8.skipped",
                  StringAttr::get(&getContext(),
                                  "a dimension is not a multiple of 16"));
      return;
    }
    int64_t gradOperand = -1;
    if (auto attr = op->getAttrOfType<IntegerAttr>("gpt.grad_operand"))
      gradOperand = attr.getInt();
    OpBuilder b(op);
    Location loc = op.getLoc();
    // One delayed-scaling state per operand of each GEMM of a layer; only
    // train_step records amaxes, eval_step and logits read the scales.
    std::string role = gpt::stringifyGemmRole(op.getRole()).str();
    bool record = op->getParentOfType<func::FuncOp>().getName() == "train_step";
    auto [qa, sa] = quantize(b, loc, layer, op.getA(),
                             gradOperand == 0 ? fp8::Format::E5M2
                                              : fp8::Format::E4M3,
                             (layer + "." + role + ".a").str(), record);
    auto [qb, sb] = quantize(b, loc, layer, op.getB(),
                             gradOperand == 1 ? fp8::Format::E5M2
                                              : fp8::Format::E4M3,
                             (layer + "." + role + ".b").str(), record);
    auto scaled = fp8::ScaledMatmulOp::create(
        b, loc, op.getType(), /*amax=*/Type(), layer, qa, qb, sa, sb,
        op.getTransposeA(), op.getTransposeB());
    // Which GEMM of the layer this is, for the precision report.
    scaled->setAttr("gpt.role", StringAttr::get(&getContext(),
                                                gpt::stringifyGemmRole(
                                                    op.getRole())));
    Value product = scaled.getResult();
    if (Value bias = op.getBias())
      product = gpt::AddOp::create(b, loc, op.getType(), layer, product, bias);
    op.replaceAllUsesWith(product);
    op.erase();
  }
};

} // namespace
