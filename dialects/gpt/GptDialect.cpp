// Registration of the gpt dialect and its attributes.
#include "dialects/gpt/GptDialect.h"
#include "dialects/common/DoubleParameter.h"

#include "mlir/IR/DialectImplementation.h"
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
