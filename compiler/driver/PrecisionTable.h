// The precision table of gptc --report (and of every artifact's manifest,
// which gptrun prints): one row per GEMM of train_step -- forward and both
// backward GEMMs of each layer -- with its shape, the formats it multiplies
// in and its scaling, or why it stayed in bf16.
#ifndef GPTC_COMPILER_DRIVER_PRECISIONTABLE_H
#define GPTC_COMPILER_DRIVER_PRECISIONTABLE_H

#include "mlir/IR/BuiltinOps.h"
#include "llvm/Support/raw_ostream.h"

namespace gptc {

/// Reads train_step after the precision passes; `precision` is gptc's
/// --precision, for GEMMs no FP8 policy touched.
void printPrecisionTable(mlir::ModuleOp module, llvm::StringRef precision,
                         llvm::raw_ostream &os);

} // namespace gptc

#endif // GPTC_COMPILER_DRIVER_PRECISIONTABLE_H
