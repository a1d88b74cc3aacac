// gptrun --profile-step: what one training step spent in each runtime
// function, from the calls Context timed (Context::beginProfile), as the
// table gptrun prints and as the JSON its log records.
#ifndef GPTRT_TRAIN_PROFILE_H
#define GPTRT_TRAIN_PROFILE_H

#include "runtime/core/Context.h"

#include <string>
#include <vector>

namespace gptrt {

// One gptrt_* function over a step: how often it ran and its summed time.
struct ProfileRow {
  std::string function;
  int64_t calls = 0;
  double ms = 0;
};

// Summed per function, the longest first (ties by name).
std::vector<ProfileRow>
summariseProfile(const std::vector<Context::ProfiledCall> &calls);

// The printed table: a heading naming the step, the device's timing
// method and the total, then the `top` longest functions with their share
// of the timed total, and the rest in one line.
std::string profileTable(const std::vector<ProfileRow> &rows, int64_t step,
                         bool onGpu, size_t top = 20);

// [{"function": ..., "calls": ..., "ms": ...}, ...] in summariseProfile's
// order.
std::string profileJson(const std::vector<ProfileRow> &rows);

} // namespace gptrt

#endif // GPTRT_TRAIN_PROFILE_H
