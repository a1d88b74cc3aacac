// Registration of the fp8 dialect and its recipe attribute.
#include "dialects/fp8/Fp8Dialect.h"
#include "dialects/common/DoubleParameter.h"

#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/TypeSwitch.h"

#include <cmath>

using namespace mlir;
using namespace gptc::fp8;

#include "dialects/fp8/Fp8Dialect.cpp.inc"
#include "dialects/fp8/Fp8Enums.cpp.inc"

#define GET_ATTRDEF_CLASSES
#include "dialects/fp8/Fp8Attrs.cpp.inc"

void Fp8Dialect::initialize() {
  addAttributes<
#define GET_ATTRDEF_LIST
#include "dialects/fp8/Fp8Attrs.cpp.inc"
      >();
  addOperations<
#define GET_OP_LIST
#include "dialects/fp8/Fp8Ops.cpp.inc"
      >();
}

// Largest finite values from the OCP 8-bit floating point specification
// (v1.0): E4M3FN 1.75 * 2^8 = 448, E5M2 1.75 * 2^15 = 57344.
double RecipeAttr::getFormatMax() const {
  return getFormat() == Format::E4M3 ? 448.0 : 57344.0;
}

LogicalResult RecipeAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                 Format format, int64_t margin,
                                 BoolAttr powerOfTwo,
                                 llvm::APFloat epsNumber) {
  double eps = epsNumber.convertToDouble();
  if (margin < 0)
    return emitError() << "recipe margin must be >= 0 (scale is divided by "
                          "2^margin), got "
                       << margin;
  if (!(eps > 0.0) || !std::isfinite(eps))
    return emitError() << "recipe eps must be a small positive number (e.g. "
                          "1.0e-12), got "
                       << eps;
  return success();
}
