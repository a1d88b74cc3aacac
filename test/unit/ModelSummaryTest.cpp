// Parameter counts and FLOPs of the GPT-2 presets, against independent
// arithmetic (llm.c's counts, nanochat's FLOPs formula).
#include "compiler/driver/ModelSummary.h"
#include "models/gpt2.h"

#include "mlir/IR/MLIRContext.h"

#include <gtest/gtest.h>

using namespace gptc;

namespace {

/// GPT-2 with biases and tied embeddings, counted by hand: per block
/// 12 C^2 weights + 13 C biases and norms; tables V_pad x C and T x C; ln_f.
int64_t expectedParams(const models::Gpt2Config &c) {
  int64_t C = c.width;
  return c.depth * (12 * C * C + 13 * C) + c.paddedVocab() * C + c.seq * C +
         2 * C;
}

ModelSummary summarize(const models::Gpt2Config &config) {
  mlir::MLIRContext context;
  auto module = models::buildGpt2(context, config);
  EXPECT_TRUE(static_cast<bool>(module));
  mlir::FailureOr<ModelSummary> summary = summarizeModel(**module);
  EXPECT_TRUE(mlir::succeeded(summary));
  return *summary;
}

TEST(ModelSummary, Gpt2SmallMatchesLlmC) {
  ModelSummary s = summarize(*models::gpt2Preset("gpt2"));
  EXPECT_EQ(s.params, 124475904);
  EXPECT_EQ(s.realParams, 124439808);
  ASSERT_EQ(s.ties.size(), 1u);
  EXPECT_EQ(s.ties[0].first, "lm_head.weight");
  EXPECT_EQ(s.ties[0].second, "wte");
}

TEST(ModelSummary, EveryPresetMatchesHandCount) {
  for (const char *name : models::gpt2PresetNames()) {
    SCOPED_TRACE(name);
    models::Gpt2Config config = *models::gpt2Preset(name);
    ModelSummary s = summarize(config);
    EXPECT_EQ(s.params, expectedParams(config));
    EXPECT_EQ(s.params - s.realParams,
              (config.paddedVocab() - config.vocab) * config.width);
  }
}

TEST(ModelSummary, FlopsFollowNanochatFormula) {
  models::Gpt2Config c = *models::gpt2Preset("gpt2");
  ModelSummary s = summarize(c);
  // 6 x (block matmul weights + lm_head) + 12 * l * h * q * t.
  int64_t weights = c.depth * 12 * c.width * c.width + c.paddedVocab() * c.width;
  EXPECT_EQ(s.matmulWeights, weights);
  EXPECT_EQ(s.flopsPerToken(),
            6 * weights + 12 * c.depth * c.heads * (c.width / c.heads) * c.seq);
}

TEST(ModelSummary, PaddedVocabIsAMultipleOf64) {
  models::Gpt2Config c{"x", 1, 64, 1, 50257, 16};
  EXPECT_EQ(c.paddedVocab(), 50304);
  c.vocab = 64;
  EXPECT_EQ(c.paddedVocab(), 64);
  c.vocab = 65;
  EXPECT_EQ(c.paddedVocab(), 128);
}

TEST(ModelSummary, ValidateNamesTheBadFlag) {
  models::Gpt2Config c = *models::gpt2Preset("gpt2");
  c.heads = 7;
  llvm::Error err = models::validate(c);
  ASSERT_TRUE(static_cast<bool>(err));
  EXPECT_EQ(llvm::toString(std::move(err)),
            "--heads 7 does not divide --width 768; pick a head count that "
            "divides the width");
  c.heads = 12;
  c.seq = -1;
  err = models::validate(c);
  ASSERT_TRUE(static_cast<bool>(err));
  EXPECT_EQ(llvm::toString(std::move(err)), "--seq must be positive, got -1");
}

TEST(ModelSummary, ThousandsSeparators) {
  EXPECT_EQ(withThousands(0), "0");
  EXPECT_EQ(withThousands(999), "999");
  EXPECT_EQ(withThousands(1000), "1,000");
  EXPECT_EQ(withThousands(124475904), "124,475,904");
  EXPECT_EQ(withThousands(-1234567), "-1,234,567");
}

} // namespace
