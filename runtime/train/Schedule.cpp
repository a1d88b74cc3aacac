// Learning-rate schedule (see Schedule.h); cosine decay as in nanoGPT.
#include "runtime/train/Schedule.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace gptrt::train {

Decay parseDecay(const std::string &name) {
  if (name == "cosine")
    return Decay::Cosine;
  if (name == "linear")
    return Decay::Linear;
  if (name == "constant")
    return Decay::Constant;
  throw std::runtime_error("--decay " + name +
                           " is unknown, expected cosine, linear or constant");
}

double Schedule::at(int64_t step) const {
  if (step < warmupSteps)
    return maxLr * static_cast<double>(step + 1) / warmupSteps;
  double minLr = maxLr * minLrFraction;
  int64_t decaySteps = std::max<int64_t>(1, totalSteps - 1 - warmupSteps);
  double progress = std::min(
      1.0, static_cast<double>(step - warmupSteps) / decaySteps);
  switch (decay) {
  case Decay::Cosine:
    return minLr + 0.5 * (1.0 + std::cos(M_PI * progress)) * (maxLr - minLr);
  case Decay::Linear:
    return maxLr - progress * (maxLr - minLr);
  case Decay::Constant:
    return maxLr;
  }
  return maxLr;
}

} // namespace gptrt::train
