// Parsing and printing of Gptc_DoubleParameter (see DoubleParameter.td).
#ifndef GPTC_DIALECTS_COMMON_DOUBLEPARAMETER_H
#define GPTC_DIALECTS_COMMON_DOUBLEPARAMETER_H

#include "mlir/IR/OpImplementation.h"

#include <cstdio>
#include <cstdlib>

namespace gptc {

inline mlir::FailureOr<llvm::APFloat>
parseShortestDouble(mlir::AsmParser &parser) {
  double value;
  if (parser.parseFloat(value))
    return mlir::failure();
  return llvm::APFloat(value);
}

/// Fewest significant digits (up to 17, always enough for a double) that
/// parse back to exactly `value`.
inline void printShortestDouble(mlir::AsmPrinter &printer,
                                const llvm::APFloat &number) {
  double value = number.convertToDouble();
  char buffer[32];
  for (int digits = 1; digits <= 17; ++digits) {
    std::snprintf(buffer, sizeof(buffer), "%.*g", digits, value);
    if (std::strtod(buffer, nullptr) == value)
      break;
  }
  llvm::StringRef text(buffer);
  // Keep it a float literal: MLIR reads "1" and "1e-05" as integers, so the
  // mantissa needs a dot ("1.0", "1.0e-05"). "inf" and "nan" stay as they are.
  if (text.find_first_of(".n") != llvm::StringRef::npos) {
    printer << text;
    return;
  }
  size_t exponent = text.find_first_of("eE");
  printer << text.substr(0, exponent) << ".0" << text.substr(exponent);
}

} // namespace gptc

#endif // GPTC_DIALECTS_COMMON_DOUBLEPARAMETER_H
