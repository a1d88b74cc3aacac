// The per-GEMM precision table (see PrecisionTable.h).
#include "compiler/driver/PrecisionTable.h"

#include "dialects/fp8/Fp8Dialect.h"
#include "dialects/gpt/GptDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/Support/Format.h"

using namespace mlir;

namespace gptc {

namespace {

std::string formatName(Type tensor) {
  Type element = cast<ShapedType>(tensor).getElementType();
  if (isa<Float8E4M3FNType>(element))
    return "E4M3";
  if (isa<Float8E5M2Type>(element))
    return "E5M2";
  std::string text;
  llvm::raw_string_ostream(text) << element;
  return text;
}

/// "M x N x K" of op(a) op(b) with the result type `c`.
std::string gemmShape(Type a, Type c, bool transposeA) {
  auto at = cast<ShapedType>(a), ct = cast<ShapedType>(c);
  int64_t n = ct.getShape().back(), m = ct.getNumElements() / n;
  int64_t k = transposeA ? at.getShape()[at.getRank() - 2] : at.getShape().back();
  return std::to_string(m) + " x " + std::to_string(n) + " x " +
         std::to_string(k);
}

/// "current" or "delayed": how the scale `scale` of an operand is made.
StringRef scalingOf(Value scale) {
  Operation *producer = scale.getDefiningOp();
  if (isa_and_nonnull<fp8::StateScaleOp>(producer))
    return "delayed";
  if (isa_and_nonnull<fp8::ScaleFromAmaxOp>(producer))
    return "current";
  if (isa_and_nonnull<fp8::RowScalesOp>(producer))
    return "rowwise";
  return "?";
}

/// The scaling column: both operands' scaling, read from the IR since a
/// policy chooses per operand.
std::string scalingColumn(fp8::ScaledMatmulOp op) {
  StringRef a = scalingOf(op.getAScale()), b = scalingOf(op.getBScale());
  auto words = [](StringRef scaling) -> std::string {
    if (scaling == "delayed")
      return "delayed (amax history)";
    if (scaling == "current")
      return "current amax";
    if (scaling == "rowwise")
      return "per-row amax";
    return scaling.str();
  };
  if (a == "rowwise" && b == "rowwise")
    return "rowwise, per-row amax";
  if (a == b)
    return "tensorwise, " + words(a);
  return "tensorwise, a " + words(a) + ", b " + words(b);
}

void row(llvm::raw_ostream &os, StringRef layer, StringRef role,
         StringRef shape, StringRef formats, StringRef how) {
  os << llvm::left_justify(layer, 16) << llvm::left_justify(role, 13)
     << llvm::left_justify(shape, 22) << llvm::left_justify(formats, 14) << how
     << "\n";
}

} // namespace

void printPrecisionTable(ModuleOp module, StringRef precision,
                         llvm::raw_ostream &os) {
  auto train = module.lookupSymbol<func::FuncOp>("train_step");
  if (!train)
    return;
  os << "precision per GEMM (" << precision << "):\n";
  row(os, "layer", "gemm", "M x N x K", "formats", "scaling");
  int64_t fp8 = 0, total = 0;
  std::string storage = precision == "fp32" ? "fp32" : "bf16";
  train.walk([&](Operation *op) {
    if (auto mm = dyn_cast<gpt::MatmulOp>(op)) {
      ++total;
      std::string why = "policy " + storage;
      if (auto skipped = op->getAttrOfType<StringAttr>("fp8.skipped"))
        why = "stays " + storage + ": " + skipped.getValue().str();
      row(os, mm.getLayer(), gpt::stringifyGemmRole(mm.getRole()),
          gemmShape(mm.getA().getType(), mm.getType(), mm.getTransposeA()),
          storage + " x " + storage, why);
    } else if (auto smm = dyn_cast<fp8::ScaledMatmulOp>(op)) {
      ++total;
      ++fp8;
      auto role = op->getAttrOfType<StringAttr>("gpt.role");
      row(os, smm.getLayer(), role ? role.getValue() : "?",
          gemmShape(smm.getA().getType(), smm.getResult().getType(),
                    smm.getTransposeA()),
          formatName(smm.getA().getType()) + " x " +
              formatName(smm.getB().getType()),
          scalingColumn(smm) +
              (smm.getFastAccum() ? ", fast accumulation" : ""));
    }
  });
  os << fp8 << " of " << total << " GEMMs in FP8\n";
}

} // namespace gptc
