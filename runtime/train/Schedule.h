// The learning-rate schedule gptrun feeds to the optimizer: linear warmup,
// then cosine, linear or no decay down to a floor at the last step.
#ifndef GPTRT_TRAIN_SCHEDULE_H
#define GPTRT_TRAIN_SCHEDULE_H

#include <cstdint>
#include <string>

namespace gptrt::train {

enum class Decay { Cosine, Linear, Constant };

/// "cosine" | "linear" | "constant"; throws with the accepted names.
Decay parseDecay(const std::string &name);

struct Schedule {
  double maxLr = 6e-4;
  double minLrFraction = 0.1;  ///< the floor, as a fraction of maxLr
  int64_t warmupSteps = 0;
  int64_t totalSteps = 1;
  Decay decay = Decay::Cosine;

  /// Learning rate of 0-based `step`: (step + 1) / warmup of the peak during
  /// warmup, then the decay from the peak to the floor at the last step.
  double at(int64_t step) const;
};

} // namespace gptrt::train

#endif // GPTRT_TRAIN_SCHEDULE_H
