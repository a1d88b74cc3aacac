// Registration of the gpt dialect and its attributes.
#include "dialects/gpt/GptDialect.h"
#include "dialects/common/DoubleParameter.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/TypeSwitch.h"

#include <cmath>

using namespace mlir;
using namespace gptc::gpt;

#include "dialects/gpt/GptDialect.cpp.inc"
#include "dialects/gpt/GptEnums.cpp.inc"
#include "dialects/gpt/GptInterfaces.cpp.inc"

#define GET_ATTRDEF_CLASSES
#include "dialects/gpt/GptAttrs.cpp.inc"

void GptDialect::initialize() {
  addAttributes<
#define GET_ATTRDEF_LIST
#include "dialects/gpt/GptAttrs.cpp.inc"
      >();
  addOperations<
#define GET_OP_LIST
#include "dialects/gpt/GptOps.cpp.inc"
      >();
}

namespace {

// The shape of parameter `name` when the module declares it, else null.
RankedTensorType paramShape(ModuleOp module, StringRef name) {
  auto param = module.lookupSymbol<ParamOp>(name);
  return param ? param.getTensorType() : RankedTensorType();
}

} // namespace

/// gpt.config (the model's settings, which the manifest and gptrun read)
/// must be positive integers that agree with the graph: what the runtime
/// believes about the model is what the model is.
LogicalResult GptDialect::verifyOperationAttribute(Operation *op,
                                                   NamedAttribute attribute) {
  if (attribute.getName() != "gpt.config")
    return success();
  auto module = dyn_cast<ModuleOp>(op);
  auto config = dyn_cast<DictionaryAttr>(attribute.getValue());
  if (!module || !config)
    return op->emitError() << "gpt.config must be a dictionary on the module "
                              "(the model's settings, as gpt-model writes "
                              "them)";
  llvm::StringMap<int64_t> value;
  for (NamedAttribute entry : config) {
    if (entry.getName() == "model")
      continue;
    auto integer = dyn_cast<IntegerAttr>(entry.getValue());
    if (!integer || integer.getValue().getSignificantBits() > 63 ||
        integer.getInt() <= 0)
      return op->emitError()
             << "gpt.config " << entry.getName().getValue() << " = "
             << entry.getValue()
             << " must be a positive integer; regenerate the model with "
                "gpt-model";
    value[entry.getName().getValue()] = integer.getInt();
  }
  auto disagree = [&](StringRef key, int64_t graph, StringRef where) {
    return op->emitError() << "gpt.config " << key << " = " << value[key]
                           << " contradicts the graph: " << where << " says "
                           << graph << "; regenerate the model with gpt-model "
                           << "or fix gpt.config";
  };
  if (value.count("heads") && value.count("width") &&
      value["width"] % value["heads"] != 0)
    return op->emitError() << "gpt.config heads = " << value["heads"]
                           << " does not divide width = " << value["width"];
  if (value.count("vocab") && value.count("padded_vocab") &&
      value["vocab"] > value["padded_vocab"])
    return disagree("vocab", value["padded_vocab"], "padded_vocab");
  if (RankedTensorType wte = paramShape(module, "wte");
      wte && wte.getRank() == 2) {
    if (value.count("padded_vocab") && value["padded_vocab"] != wte.getDimSize(0))
      return disagree("padded_vocab", wte.getDimSize(0), "@wte's rows");
    if (value.count("width") && value["width"] != wte.getDimSize(1))
      return disagree("width", wte.getDimSize(1), "@wte's columns");
    auto param = module.lookupSymbol<ParamOp>("wte");
    if (std::optional<int64_t> rows = param.getRealRows();
        rows && value.count("vocab") && value["vocab"] != *rows)
      return disagree("vocab", *rows, "@wte's real_rows");
  }
  if (RankedTensorType wpe = paramShape(module, "wpe");
      wpe && wpe.getRank() == 2 && value.count("seq") &&
      value["seq"] != wpe.getDimSize(0))
    return disagree("seq", wpe.getDimSize(0), "@wpe's rows");
  return success();
}

LogicalResult InitAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                               InitKind kind, llvm::APFloat stdNumber) {
  double std = stdNumber.convertToDouble();
  if (kind == InitKind::Normal) {
    if (!(std > 0.0) || !std::isfinite(std))
      return emitError() << "normal initialiser needs a positive std, got "
                         << std << "; write #gpt.init<normal, std = 0.02>";
  } else if (std != 0.0) {
    return emitError() << "'" << stringifyInitKind(kind)
                       << "' initialiser takes no std; remove it";
  }
  return success();
}
