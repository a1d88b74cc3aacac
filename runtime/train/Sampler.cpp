// Sampling through the logits entry point (see Sampler.h).
#include "runtime/train/Sampler.h"

#include "runtime/core/Artifact.h"
#include "runtime/core/Context.h"
#include "runtime/core/Io.h"
#include "runtime/core/ManifestCheck.h"
#include "runtime/core/Rng.h"
#include "runtime/data/Tokenizer.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <stdexcept>
#include <vector>

namespace gptrt::train {

namespace {

/// Draws from softmax(logits / temperature) restricted to the k largest.
int32_t drawToken(const float *logits, int64_t vocab, double temperature,
                  int64_t topK, Xoshiro256StarStar &rng) {
  std::vector<int32_t> order(vocab);
  std::iota(order.begin(), order.end(), 0);
  int64_t k = topK > 0 ? std::min(topK, vocab) : vocab;
  std::partial_sort(order.begin(), order.begin() + k, order.end(),
                    [&](int32_t a, int32_t b) { return logits[a] > logits[b]; });
  std::vector<double> weights(k);
  double top = logits[order[0]], total = 0;
  for (int64_t i = 0; i < k; ++i)
    total += weights[i] = std::exp((logits[order[i]] - top) / temperature);
  double u = rng.uniform() * total;
  for (int64_t i = 0; i < k; ++i) {
    u -= weights[i];
    if (u <= 0)
      return order[i];
  }
  return order[k - 1];
}

/// `bytes` with every invalid UTF-8 sequence replaced by U+FFFD, as GPT-2's
/// decoder does (errors="replace"): sampled tokens can split a character.
std::string validUtf8(const std::string &bytes) {
  std::string out;
  size_t i = 0;
  while (i < bytes.size()) {
    unsigned char c = bytes[i];
    size_t length = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3
                                 : (c >> 3) == 0x1E ? 4 : 0;
    bool valid = length > 0 && i + length <= bytes.size();
    for (size_t j = 1; valid && j < length; ++j)
      valid = (static_cast<unsigned char>(bytes[i + j]) >> 6) == 0x2;
    if (valid) {
      out.append(bytes, i, length);
      i += length;
    } else {
      out += "\xEF\xBF\xBD";
      ++i;
    }
  }
  return out;
}

} // namespace

std::string sample(const Artifact &artifact, Context &ctx,
                   const SampleOptions &o) {
  if (!(o.temperature > 0))
    throw std::runtime_error("--temperature " + std::to_string(o.temperature) +
                             " must be positive");
  const auto &manifest = artifact.manifest();
  if (!artifact.hasEntry(EntryKind::Logits))
    throw std::runtime_error("artifact " + artifact.path() +
                             " has no logits entry point: compile it with a "
                             "gptc that emits one");
  data::Tokenizer tokenizer =
      o.vocab.empty() ? data::Tokenizer::load() : data::Tokenizer::load(o.vocab);
  std::vector<int32_t> ids = o.prompt.empty()
                                 ? std::vector<int32_t>{data::kEndOfText}
                                 : tokenizer.encode(o.prompt);
  const int64_t B = manifest.micro_batch(), T = manifest.seq();
  const int64_t padded = manifest.model().padded_vocab();
  const int64_t vocab = manifest.model().vocab();
  const gptc::manifest::NamedBuffer *out =
      findBuffer(entrySpec(manifest, EntryKind::Logits).outputs(), "logits");
  if (!out)
    throw std::runtime_error("artifact " + artifact.path() +
                             " binds no \"logits\" output");

  Xoshiro256StarStar rng(o.seed);
  std::vector<int32_t> window(B * T, data::kEndOfText);
  std::vector<float> next(padded);  // the logits of the last position
  for (int64_t step = 0; step < o.tokens; ++step) {
    // The last T tokens at the start of every row; causal attention makes
    // what follows them irrelevant to the logits we read.
    int64_t length = std::min<int64_t>(ids.size(), T);
    for (int64_t row = 0; row < B; ++row)
      std::copy(ids.end() - length, ids.end(), window.begin() + row * T);
    writeInput(ctx, manifest, EntryKind::Logits, "tokens", window.data(), {B, T});
    artifact.run(EntryKind::Logits, ctx);
    // Only the one row we need leaves the arena (device memory on CUDA).
    const float *logits = static_cast<const float *>(ctx.data(out->buffer()));
    ctx.copyOut(next.data(), logits + (length - 1) * padded,
                next.size() * sizeof(float));
    ids.push_back(drawToken(next.data(), vocab, o.temperature, o.topK, rng));
  }
  // An empty prompt starts from end-of-text, which is not printed.
  size_t first = o.prompt.empty() ? 1 : 0;
  return validUtf8(
      tokenizer.decode(std::vector<int32_t>(ids.begin() + first, ids.end())));
}

} // namespace gptrt::train
