// What `gptc --report` says about a gpt-dialect model: parameters per layer,
// the total as llm.c counts it, and training FLOPs per token as nanochat
// estimates them.
#ifndef GPTC_COMPILER_DRIVER_MODELSUMMARY_H
#define GPTC_COMPILER_DRIVER_MODELSUMMARY_H

#include "mlir/IR/BuiltinOps.h"
#include "llvm/Support/raw_ostream.h"

#include <string>
#include <utility>
#include <vector>

namespace gptc {

struct LayerSummary {
  std::string name;
  std::vector<std::string> ops;  ///< compute ops, in program order
  int64_t params = 0;            ///< elements of the layer's own parameters
  int64_t flopsPerToken = 0;     ///< training FLOPs (forward + backward)
};

struct ModelSummary {
  std::string model;
  std::vector<std::pair<std::string, int64_t>> config;
  std::vector<LayerSummary> layers;  ///< in order of first appearance
  /// Parameter elements, tied parameters counted once (llm.c's figure).
  int64_t params = 0;
  /// The same without the padding rows of padded tables (real_rows).
  int64_t realParams = 0;
  std::vector<std::pair<std::string, std::string>> ties;  ///< (param, target)
  /// Weight elements multiplied per token, one count per matmul use.
  int64_t matmulWeights = 0;
  /// 12 * width * seq per attention op: nanochat's 12 * l * h * q * t.
  int64_t attentionFlopsPerToken = 0;

  /// Training FLOPs per token: 6 per matmul weight element (2 forward, 4
  /// backward) plus the attention term, as nanochat's estimate_flops.
  int64_t flopsPerToken() const {
    return 6 * matmulWeights + attentionFlopsPerToken;
  }
};

/// Summarises `module`; emits a diagnostic and fails if it holds no model.
mlir::FailureOr<ModelSummary> summarizeModel(mlir::ModuleOp module);

void printReport(const ModelSummary &summary, llvm::raw_ostream &os);

/// 124475904 -> "124,475,904".
std::string withThousands(int64_t value);

} // namespace gptc

#endif // GPTC_COMPILER_DRIVER_MODELSUMMARY_H
