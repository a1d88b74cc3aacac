// GPT-2 (Radford et al., 2019) as the DSL writes it. Initialisation follows
// GPT-2 / nanoGPT: weights ~ normal(0.02), the two projections that feed the
// residual stream ~ normal(0.02 / sqrt(2 * depth)), biases zero, layer norms
// one and zero.
#include "models/gpt2.h"

#include "compiler/dsl/ModelBuilder.h"

#include <cmath>

using gptc::dsl::Init;
using gptc::dsl::ModelBuilder;
using gptc::dsl::Tensor;

namespace gptc::models {

namespace {

constexpr double kInitStd = 0.02;

struct Preset {
  const char *name;
  int64_t depth, width, heads, seq;
};

// Sizes of the released GPT-2 models; gpt2-tiny is ours, small enough that a
// CPU training step takes well under a second.
constexpr Preset kPresets[] = {
    {"gpt2-tiny", 4, 128, 4, 64},      {"gpt2", 12, 768, 12, 1024},
    {"gpt2-medium", 24, 1024, 16, 1024}, {"gpt2-large", 36, 1280, 20, 1024},
    {"gpt2-xl", 48, 1600, 25, 1024},
};

Tensor selfAttention(ModelBuilder &m, Tensor x, const Gpt2Config &c) {
  ModelBuilder::Scope attn = m.scope("attn");
  double residualStd = kInitStd / std::sqrt(2.0 * c.depth);
  Tensor qkv = m.linear("qkv", x, 3 * c.width, kInitStd);
  std::vector<Tensor> parts = m.split(qkv, /*axis=*/2, /*parts=*/3);
  Tensor y = m.causalSelfAttention(parts[0], parts[1], parts[2], c.heads);
  return m.linear("proj", y, c.width, residualStd);
}

Tensor mlp(ModelBuilder &m, Tensor x, const Gpt2Config &c) {
  ModelBuilder::Scope mlp = m.scope("mlp");
  double residualStd = kInitStd / std::sqrt(2.0 * c.depth);
  Tensor h = m.gelu(m.linear("fc", x, 4 * c.width, kInitStd));
  return m.linear("proj", h, c.width, residualStd);
}

} // namespace

llvm::ArrayRef<const char *> gpt2PresetNames() {
  static const char *names[] = {"gpt2-tiny", "gpt2", "gpt2-medium",
                                "gpt2-large", "gpt2-xl"};
  return names;
}

std::optional<Gpt2Config> gpt2Preset(llvm::StringRef name) {
  for (const Preset &p : kPresets)
    if (name == p.name)
      return Gpt2Config{p.name, p.depth, p.width, p.heads, 50257, p.seq};
  return std::nullopt;
}

llvm::Error validate(const Gpt2Config &c) {
  for (auto [flag, value] : {std::pair<const char *, int64_t>{"depth", c.depth},
                             {"width", c.width},
                             {"heads", c.heads},
                             {"vocab", c.vocab},
                             {"seq", c.seq}})
    if (value <= 0)
      return llvm::createStringError("--%s must be positive, got %lld", flag,
                                     static_cast<long long>(value));
  if (c.width % c.heads != 0)
    return llvm::createStringError(
        "--heads %lld does not divide --width %lld; pick a head count that "
        "divides the width",
        static_cast<long long>(c.heads), static_cast<long long>(c.width));
  return llvm::Error::success();
}

llvm::Expected<mlir::OwningOpRef<mlir::ModuleOp>>
buildGpt2(mlir::MLIRContext &context, const Gpt2Config &c) {
  if (llvm::Error err = validate(c))
    return std::move(err);
  ModelBuilder m(context, c.name);
  m.setConfig("depth", c.depth);
  m.setConfig("width", c.width);
  m.setConfig("heads", c.heads);
  m.setConfig("vocab", c.vocab);
  m.setConfig("padded_vocab", c.paddedVocab());
  m.setConfig("seq", c.seq);

  mlir::Type i32 = mlir::IntegerType::get(&context, 32);
  Tensor tokens = m.input("tokens", {mlir::ShapedType::kDynamic, c.seq}, i32);
  Tensor targets = m.input("targets", {mlir::ShapedType::kDynamic, c.seq}, i32);

  Tensor wte = m.param("wte", {c.paddedVocab(), c.width}, Init::normal(kInitStd),
                       /*realRows=*/c.vocab);
  Tensor wpe = m.param("wpe", {c.seq, c.width}, Init::normal(kInitStd));
  // One builder call per statement: C++ leaves the order in which function
  // arguments are evaluated open, and the op order must not depend on it.
  Tensor tokenEmbedding = m.embedding("wte", wte, tokens);
  Tensor positions = m.arange("wpe", c.seq);
  Tensor positionEmbedding = m.embedding("wpe", wpe, positions);
  Tensor x = m.add("embed", tokenEmbedding, positionEmbedding);

  for (int64_t layer = 0; layer < c.depth; ++layer) {
    ModelBuilder::Scope block = m.scope("h." + std::to_string(layer));
    x = m.add("attn.residual", x, selfAttention(m, m.layerNorm("ln_1", x), c));
    x = m.add("mlp.residual", x, mlp(m, m.layerNorm("ln_2", x), c));
  }
  x = m.layerNorm("ln_f", x);

  Tensor lmHead = m.tiedParam("lm_head.weight", "wte");
  Tensor logits = m.matmul("lm_head", x, lmHead, /*transposeB=*/true);
  Tensor loss = m.crossEntropy("loss", logits, targets, c.vocab);
  return m.finish({{"loss", loss}, {"logits", logits}});
}

} // namespace gptc::models
