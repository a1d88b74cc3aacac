// gptrun's single-process training loop: micro-steps with gradient
// accumulation, the optimizer step, evaluation, a live progress line and a
// JSONL metrics file. Data parallelism joins later (issue: data parallel).
#ifndef GPTRT_TRAIN_TRAINER_H
#define GPTRT_TRAIN_TRAINER_H

#include "runtime/train/MultipleChoice.h"
#include "runtime/train/Sampler.h"
#include "runtime/train/Schedule.h"

#include <cstdint>
#include <string>

namespace gptrt::train {

struct TrainOptions {
  std::string artifact;
  std::string device = "cpu";
  std::string data;          ///< glob or directory of llm.c shards
  std::string valData;       ///< empty: no evaluation
  int64_t steps = 100;
  int64_t totalBatchTokens = 0;  ///< 0: one micro-batch per step
  Schedule schedule;
  uint64_t seed = 1337;
  std::string log;           ///< JSONL file; empty: none
  int64_t evalEvery = 0;     ///< 0: evaluate at the end only (if valData)
  int64_t valTokens = 16384; ///< target tokens per evaluation (Validation.h)
  std::string choices;       ///< multiple-choice eval file, scored at each
                             ///< evaluation (MultipleChoice.h); empty: none
  int64_t choicesLimit = 0;  ///< first N examples only (0: all)
  std::string dump;          ///< directory for parameter/gradient dumps
  bool quiet = false;        ///< no live progress line
  SampleOptions sample;      ///< printed after training when tokens > 0
  int64_t samplesEvery = 0;  ///< also print one every N steps (0: never)
  int64_t fp8StatsEvery = 0; ///< log FP8 cast statistics every N steps
  std::string ckptDir;       ///< where checkpoints go; empty: none
  int64_t ckptEvery = 0;     ///< steps between checkpoints (and one at the end)
  int keep = 0;              ///< newest checkpoints kept; 0: all
  std::string resume;        ///< "latest" (in ckptDir) or a checkpoint path
};

/// Runs the whole training; throws std::runtime_error with one clear line
/// on bad input. Returns the last training loss.
float train(const TrainOptions &options);

/// Mean eval_step loss of `artifact` with the parameters of `checkpoint`
/// over the first `valTokens` target tokens of `valData` (Validation.h).
float evaluateCheckpoint(const std::string &artifact,
                         const std::string &checkpoint,
                         const std::string &valData, int64_t valTokens);

/// Multiple-choice accuracy of `artifact` with the parameters of
/// `checkpoint` on the first `limit` (0: all) examples of `file`.
ChoiceScore scoreCheckpointChoices(const std::string &artifact,
                                   const std::string &checkpoint,
                                   const std::string &file, int64_t limit);

/// Text from `artifact` with the parameters of `checkpoint`.
std::string sampleCheckpoint(const std::string &artifact,
                             const std::string &checkpoint,
                             const SampleOptions &options);

/// Writes the initial parameters of `artifact` (initialised with `seed`) to
/// `dir` in the export format of runtime/core/Params.h.
void exportInitialParams(const std::string &artifact, uint64_t seed,
                         const std::string &dir);

} // namespace gptrt::train

#endif // GPTRT_TRAIN_TRAINER_H
