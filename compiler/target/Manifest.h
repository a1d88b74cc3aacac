// Builds the manifest (runtime/abi/manifest.proto) of an artifact from the
// module after rt-plan-memory: arenas, parameters, entry points and their
// bound inputs and outputs, plus what the report says about the model.
#ifndef GPTC_COMPILER_TARGET_MANIFEST_H
#define GPTC_COMPILER_TARGET_MANIFEST_H

#include "compiler/driver/ModelSummary.h"

#include "mlir/IR/BuiltinOps.h"

#include <string>

namespace gptc {

struct ManifestInputs {
  const ModelSummary *summary = nullptr;
  int64_t microBatch = 0;
  std::string precision;
  std::string report;          ///< gptc --report's text
  std::string precisionTable;  ///< one row per GEMM, printed by gptrun
};

/// The serialized manifest, or a diagnostic on `module` and failure.
mlir::FailureOr<std::string> buildManifest(mlir::ModuleOp module,
                                           const ManifestInputs &inputs);

} // namespace gptc

#endif // GPTC_COMPILER_TARGET_MANIFEST_H
