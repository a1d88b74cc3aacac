// GPT-2 written with the DSL: configuration, the named presets, and the
// builder of the gpt-dialect module.
#ifndef GPTC_MODELS_GPT2_H
#define GPTC_MODELS_GPT2_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/Support/Error.h"

#include <optional>
#include <string>

namespace gptc::models {

struct Gpt2Config {
  std::string name;
  int64_t depth = 12;   ///< transformer blocks
  int64_t width = 768;  ///< model (embedding) dimension
  int64_t heads = 12;   ///< attention heads; must divide width
  int64_t vocab = 50257;
  int64_t seq = 1024;   ///< context length (block size)

  /// The vocabulary rounded up to a multiple of 64, as llm.c does, so the
  /// embedding and lm_head GEMMs have aligned shapes.
  int64_t paddedVocab() const { return (vocab + 63) / 64 * 64; }
};

/// Names of the presets: gpt2-tiny, gpt2, gpt2-medium, gpt2-large, gpt2-xl.
llvm::ArrayRef<const char *> gpt2PresetNames();
std::optional<Gpt2Config> gpt2Preset(llvm::StringRef name);

/// Says what is wrong with a configuration (a non-positive size, heads not
/// dividing width), or success.
llvm::Error validate(const Gpt2Config &config);

/// Embedding of tokens and positions, `depth` pre-LN blocks of causal
/// self-attention and MLP with residuals, final layer norm, lm_head tied to
/// the token embedding, and the mean cross-entropy loss. @forward takes
/// tokens and targets [batch, seq] and returns (loss, logits).
llvm::Expected<mlir::OwningOpRef<mlir::ModuleOp>>
buildGpt2(mlir::MLIRContext &context, const Gpt2Config &config);

} // namespace gptc::models

#endif // GPTC_MODELS_GPT2_H
