// Text generation through an artifact's compiled `logits` entry point:
// top-k sampling with a temperature, one token at a time over a sliding
// window of the compiled sequence length (no KV cache yet).
#ifndef GPTRT_TRAIN_SAMPLER_H
#define GPTRT_TRAIN_SAMPLER_H

#include <cstdint>
#include <string>

namespace gptrt {
class Artifact;
class Context;
} // namespace gptrt

namespace gptrt::train {

struct SampleOptions {
  std::string prompt;        ///< empty: start from the end-of-text token
  int64_t tokens = 0;        ///< new tokens to generate
  double temperature = 1.0;  ///< > 0
  int64_t topK = 40;         ///< 0: the whole vocabulary
  uint64_t seed = 42;
  std::string vocab;         ///< encoder.json + vocab.bpe; empty: default
};

/// The prompt followed by the generated text.
std::string sample(const Artifact &artifact, Context &ctx,
                   const SampleOptions &options);

} // namespace gptrt::train

#endif // GPTRT_TRAIN_SAMPLER_H
