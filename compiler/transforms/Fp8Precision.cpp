// fp8-precision: GEMMs in FP8 with explicit per-tensor scale computation
// (see Passes.td). Which operands go FP8, in which format and with which
// scaling is the selected PrecisionPolicy's decision (compiler/precision);
// this file keeps what every policy shares: the eligibility checks, the
// include / exclude / size filters and the rewriting into fp8 ops.
// Numerics: DESIGN.md section 4.
#include "compiler/transforms/Passes.h"

#include "compiler/precision/PolicyRegistry.h"

#include "mlir/IR/Builders.h"
#include "llvm/Support/GlobPattern.h"

namespace gptc {
#define GEN_PASS_DEF_FP8PRECISION
#include "compiler/transforms/Passes.h.inc"
} // namespace gptc

using namespace mlir;
namespace gpt = gptc::gpt;
namespace fp8 = gptc::fp8;
using gptc::Fp8Format;
using gptc::Fp8Scaling;
using gptc::GemmOperand;
using gptc::PrecisionDecision;
using gptc::PrecisionPolicy;

namespace {

// The largest margin that still leaves the amax a code above zero: scaled
// values top out at fp8_max / 2^margin, E5M2's smallest subnormal is 2^-16
// and its largest value 57344 < 2^16 (E4M3's: 2^-9 and 448, so E4M3 loses
// everything beyond a margin of 17 already).
constexpr int64_t kMaxMargin = 31;

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

/// N of a layer named "h.N.<rest>", how the DSL names transformer blocks.
std::optional<int64_t> blockOf(StringRef layer) {
  if (!layer.consume_front("h."))
    return std::nullopt;
  size_t dot = layer.find('.');
  uint64_t block;
  if (dot == StringRef::npos || layer.take_front(dot).getAsInteger(10, block))
    return std::nullopt;
  return static_cast<int64_t>(block);
}

gptc::GemmRole roleOf(gpt::GemmRole role) {
  switch (role) {
  case gpt::GemmRole::Forward:
    return gptc::GemmRole::Forward;
  case gpt::GemmRole::GradInput:
    return gptc::GemmRole::GradInput;
  case gpt::GemmRole::GradWeight:
    return gptc::GemmRole::GradWeight;
  }
  llvm_unreachable("every gpt.matmul role is handled");
}

/// True for a parameter's value, also seen through the ops that only
/// reshape, transpose or convert it (a tied weight, a storage cast).
bool isParameter(Value value) {
  while (Operation *def = value.getDefiningOp()) {
    if (isa<gpt::ParamRefOp>(def))
      return true;
    if (!isa<gpt::ReshapeOp, gpt::TransposeOp, gpt::CastOp>(def))
      return false;
    value = def->getOperand(0);
  }
  return false;
}

bool matchesAny(ArrayRef<llvm::GlobPattern> globs, StringRef layer) {
  return llvm::any_of(globs, [&](const llvm::GlobPattern &glob) {
    return glob.match(layer);
  });
}

class Fp8PrecisionPass
    : public gptc::impl::Fp8PrecisionBase<Fp8PrecisionPass> {
public:
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    gptc::PolicyRegistry &registry = gptc::PolicyRegistry::global();
    const gptc::PolicyEntry *entry = registry.lookup(policy);
    if (!entry) {
      module.emitError() << "fp8-precision has no policy '" << policy
                         << "'; use " << registry.listNames()
                         << " (a plugin's policy needs gptc "
                            "--load-pass-plugin=LIB.so first)";
      return signalPassFailure();
    }
    std::unique_ptr<PrecisionPolicy> selected = entry->create();
    // A policy that never picks FP8 leaves the module as it is: no
    // "stays bf16" annotation on every GEMM, the IR of running no pass.
    if (!selected->mayUseFp8())
      return;
    if (minMnk < 0) {
      module.emitError() << "fp8-precision min-mnk="
                         << static_cast<int64_t>(minMnk)
                         << " must be >= 0 (0 keeps every eligible GEMM)";
      return signalPassFailure();
    }
    if (amaxReduction != "max" && amaxReduction != "most_recent") {
      module.emitError() << "fp8-precision amax-reduction='"
                         << amaxReduction << "' is not a reduction; use max "
                            "or most_recent";
      return signalPassFailure();
    }
    if (margin < 0 || margin > kMaxMargin || historyLength < 1) {
      module.emitError() << "fp8-precision margin=" << static_cast<int64_t>(margin)
                         << " and history=" << static_cast<int64_t>(historyLength)
                         << " must be 0.." << kMaxMargin << " and >= 1 (a "
                            "margin divides the scales by 2^margin: beyond "
                         << kMaxMargin
                         << " even the amax codes to zero, in E4M3 beyond 17)";
      return signalPassFailure();
    }
    if (weightScaling != "policy" && weightScaling != "current") {
      module.emitError() << "fp8-precision weight-scaling='" << weightScaling
                         << "' is not a choice; use policy (the policy's "
                            "recipe) or current (weights from their own "
                            "amax)";
      return signalPassFailure();
    }
    if (failed(compileGlobs(exclude, "exclude", excludeGlobs)) ||
        failed(compileGlobs(include, "include", includeGlobs)))
      return signalPassFailure();

    blockCount.reset();
    module.walk([&](gpt::MatmulOp op) {
      if (std::optional<int64_t> block = blockOf(op.getLayer()))
        blockCount = std::max(blockCount.value_or(0), *block + 1);
    });
    for (auto func : module.getOps<func::FuncOp>()) {
      if (func.getName() == "optimizer_step" || func.isExternal())
        continue;
      SmallVector<gpt::MatmulOp> matmuls(func.getOps<gpt::MatmulOp>());
      for (gpt::MatmulOp op : matmuls)
        if (failed(rewrite(op, *selected)))
          return signalPassFailure();
    }
  }

private:
  LogicalResult compileGlobs(ArrayRef<std::string> patterns, StringRef option,
                             SmallVectorImpl<llvm::GlobPattern> &globs) {
    globs.clear();
    for (const std::string &pattern : patterns) {
      llvm::Expected<llvm::GlobPattern> glob = llvm::GlobPattern::create(pattern);
      if (!glob)
        return getOperation().emitError()
               << "fp8-precision " << option << " pattern '" << pattern
               << "' is not a valid glob (" << llvm::toString(glob.takeError())
               << "); use layer names with '*' and '?' wildcards, e.g. "
                  "h.*.mlp.fc or lm_head";
      globs.push_back(std::move(*glob));
    }
    return success();
  }

  /// The reason the GEMM stays in high precision given both operands'
  /// decisions, or "" when it runs in FP8.
  std::string whyHighPrecision(const PrecisionDecision (&decisions)[2]) {
    auto reason = [&](const PrecisionDecision &decision) {
      return decision.reason.empty() ? "policy " + policy : decision.reason;
    };
    bool keepA = !decisions[0].useFp8, keepB = !decisions[1].useFp8;
    if (keepA && keepB)
      return reason(decisions[0]) == reason(decisions[1])
                 ? reason(decisions[0])
                 : "operand a: " + reason(decisions[0]) +
                       "; operand b: " + reason(decisions[1]);
    // FP8 GEMMs multiply two FP8 matrices: one high-precision operand keeps
    // the whole GEMM in high precision.
    if (keepA || keepB)
      return std::string("operand ") + (keepA ? "a" : "b") + ": " +
             reason(decisions[keepA ? 0 : 1]);
    if (decisions[0].format == Fp8Format::E5M2 &&
        decisions[1].format == Fp8Format::E5M2)
      return "policy " + policy + " chose E5M2 for both operands, which FP8 "
             "tensor cores do not multiply";
    return "";
  }

  LogicalResult checkDecision(gpt::MatmulOp op, unsigned index,
                              const PrecisionDecision &decision) {
    if (!decision.useFp8 ||
        (decision.margin >= 0 && decision.margin <= kMaxMargin &&
         decision.amaxHistory >= 0))
      return success();
    return op.emitError() << "policy '" << policy << "' chose margin "
                          << decision.margin << " and amax history "
                          << decision.amaxHistory << " for operand "
                          << (index ? "b" : "a") << " of layer '"
                          << op.getLayer() << "'"
                          << "; the margin must be 0.." << kMaxMargin
                          << " and the history >= 0 (history 0 takes the "
                             "pass's history option): fix the policy";
  }

  /// `value` as FP8 in the format `decision` picked, and its scale. Current
  /// scaling: amax -> scale -> quantize, all from this step's tensor.
  /// Delayed: the scale comes from the amax history in the fp8.state
  /// `stateName` (created on first use), and this step's amax is recorded
  /// there for the next steps.
  FailureOr<std::pair<Value, Value>>
  quantize(OpBuilder &b, gpt::MatmulOp op, Value value,
           const PrecisionDecision &decision, StringRef stateName,
           bool record) {
    MLIRContext *context = &getContext();
    Location loc = op.getLoc();
    StringRef layer = op.getLayer();
    auto type = cast<RankedTensorType>(value.getType());
    fp8::Format format = decision.format == Fp8Format::E4M3
                             ? fp8::Format::E4M3
                             : fp8::Format::E5M2;
    Type element = format == fp8::Format::E4M3
                       ? Type(Float8E4M3FNType::get(context))
                       : Type(Float8E5M2Type::get(context));
    Type scalar = RankedTensorType::get({}, Float32Type::get(context));
    auto recipe = fp8::RecipeAttr::get(
        context, format, decision.margin ? decision.margin : margin,
        decision.powerOfTwo ? BoolAttr::get(context, true) : BoolAttr(),
        llvm::APFloat(1e-12));
    if (decision.scaling == Fp8Scaling::Rowwise) {
      // Along the GEMM's non-contracted dimension: a's M, b's N.
      bool isA = value == op.getA();
      bool alongRows = isA ? !op.getTransposeA() : op.getTransposeB();
      int64_t cols = type.getShape().back(), rows = type.getNumElements() / cols;
      auto vector = RankedTensorType::get({alongRows ? rows : cols},
                                          Float32Type::get(context));
      fp8::Axis along = alongRows ? fp8::Axis::Rows : fp8::Axis::Cols;
      Value amax = fp8::AmaxRowsOp::create(b, loc, vector, layer, value, along);
      Value scales =
          fp8::RowScalesOp::create(b, loc, vector, layer, amax, recipe);
      Value q = fp8::QuantizeRowsOp::create(
          b, loc, RankedTensorType::get(type.getShape(), element), layer,
          value, scales, along);
      return std::make_pair(q, scales);
    }
    Value scale;
    if (decision.scaling == Fp8Scaling::Delayed) {
      int64_t history =
          decision.amaxHistory > 0 ? decision.amaxHistory : historyLength;
      if (failed(declareState(op, stateName, recipe, history)))
        return failure();
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
    return std::make_pair(q, scale);
  }

  /// Declares the scaling state `name` once per module. train_step,
  /// eval_step and logits share it, so the policy must pick the same
  /// recipe for the operand in each of them.
  LogicalResult declareState(gpt::MatmulOp op, StringRef name,
                             fp8::RecipeAttr recipe, int64_t history) {
    ModuleOp module = getOperation();
    if (Operation *existing = module.lookupSymbol(name)) {
      auto state = dyn_cast<fp8::StateOp>(existing);
      if (state && (state.getRecipe() != recipe ||
                    static_cast<int64_t>(state.getHistory()) != history))
        return op.emitError()
               << "policy '" << policy << "' chose a different recipe or "
               << "amax history for the scaling state '" << name
               << "' than for the same operand in another function; a "
                  "policy must decide the same for train_step, eval_step "
                  "and logits";
      return success();
    }
    OpBuilder top(module.getBody(), module.getBody()->begin());
    fp8::StateOp::create(top, module.getLoc(), name, op.getLayer(),
                         static_cast<uint64_t>(history),
                         amaxReduction == "most_recent"
                             ? fp8::AmaxReduction::MostRecent
                             : fp8::AmaxReduction::Max,
                         recipe);
    return success();
  }

  LogicalResult rewrite(gpt::MatmulOp op, const PrecisionPolicy &selected) {
    StringRef layer = op.getLayer();
    auto keep = [&](const Twine &reason) {
      op->setAttr("fp8.skipped", StringAttr::get(&getContext(), reason));
      return success();
    };
    if (matchesAny(excludeGlobs, layer))
      return keep("excluded");
    if (!includeGlobs.empty() && !matchesAny(includeGlobs, layer))
      return keep("not included");
    std::optional<std::array<int64_t, 3>> sizes = gemmSizes(op);
    // FP8 tensor cores need every GEMM dimension to be a multiple of 16.
    if (!sizes || llvm::any_of(*sizes, [](int64_t d) { return d % 16 != 0; }))
      return keep("a dimension is not a multiple of 16");
    auto [m, n, k] = *sizes;
    int64_t threshold = minMnk;
    if (m * n * k < threshold)
      return keep("too small to gain (M*N*K = " + Twine(m * n * k) +
                  " < threshold " + Twine(threshold) + ")");

    int64_t gradOperand = -1;
    if (auto attr = op->getAttrOfType<IntegerAttr>("gpt.grad_operand"))
      gradOperand = attr.getInt();
    GemmOperand operand;
    operand.matmul = op;
    operand.layer = layer;
    operand.role = roleOf(op.getRole());
    operand.m = m;
    operand.n = n;
    operand.k = k;
    operand.block = blockOf(layer);
    operand.blockCount = operand.block ? blockCount : std::nullopt;
    PrecisionDecision decisions[2];
    for (unsigned index : {0u, 1u}) {
      operand.index = index;
      operand.isGradient = gradOperand == static_cast<int64_t>(index);
      operand.isParameter = isParameter(index ? op.getB() : op.getA());
      decisions[index] = selected.decide(operand);
      // A weight changes only at the optimizer step: its current amax is
      // exact and, unlike a history that moves each micro-step, lets
      // rt-cache-weight-casts cast it once per step.
      if (weightScaling == "current" && operand.isParameter &&
          decisions[index].scaling == Fp8Scaling::Delayed)
        decisions[index].scaling = Fp8Scaling::Current;
      if (failed(checkDecision(op, index, decisions[index])))
        return failure();
    }
    std::string reason = whyHighPrecision(decisions);
    if (!reason.empty())
      return keep(reason);
    if (decisions[1].scaling == Fp8Scaling::Rowwise &&
        cast<RankedTensorType>(op.getB().getType()).getRank() > 2)
      return keep("rowwise scaling of a batched b is not supported");

    OpBuilder b(op);
    Location loc = op.getLoc();
    // One delayed-scaling state per operand of each GEMM of a layer; only
    // train_step records amaxes, eval_step and logits read the scales.
    std::string role = gpt::stringifyGemmRole(op.getRole()).str();
    bool record = op->getParentOfType<func::FuncOp>().getName() == "train_step";
    auto a = quantize(b, op, op.getA(), decisions[0],
                      (layer + "." + role + ".a").str(), record);
    if (failed(a))
      return failure();
    auto bq = quantize(b, op, op.getB(), decisions[1],
                       (layer + "." + role + ".b").str(), record);
    if (failed(bq))
      return failure();
    auto [qa, sa] = *a;
    auto [qb, sb] = *bq;
    // Fast accumulation in the forward GEMMs only: the gradients' GEMMs sum
    // long K (tokens, for the weight gradient) where the error would grow.
    bool fast = fastAccum && op.getRole() == gpt::GemmRole::Forward;
    auto scaled = fp8::ScaledMatmulOp::create(
        b, loc, op.getType(), /*amax=*/Type(), layer, qa, qb, sa, sb,
        op.getTransposeA(), op.getTransposeB(), fast);
    // Which GEMM of the layer this is, for the precision report.
    scaled->setAttr("gpt.role", StringAttr::get(&getContext(),
                                                gpt::stringifyGemmRole(
                                                    op.getRole())));
    Value product = scaled.getResult();
    if (Value bias = op.getBias())
      product = gpt::AddOp::create(b, loc, op.getType(), layer, product, bias);
    op.replaceAllUsesWith(product);
    op.erase();
    return success();
  }

  SmallVector<llvm::GlobPattern> excludeGlobs, includeGlobs;
  /// 1 + the largest N of the module's "h.N.*" layers.
  std::optional<int64_t> blockCount;
};

} // namespace
