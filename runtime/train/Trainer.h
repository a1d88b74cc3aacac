// gptrun's training loop: micro-steps with gradient accumulation, the
// optimizer step, evaluation, a live progress line and a JSONL metrics file;
// in one process, or as one rank of a data-parallel job (Worker.h).
//
// Data parallelism: every rank reads its own slice of each global window
// (data/Shards.h), runs total-batch-tokens / (B x T x world) micro-steps and
// then the gradient arena is summed over ranks (RankSync.h) before the
// optimizer step, so the parameters stay the same on every rank and a step
// means the same global batch at any world size. Rank 0 alone prints, logs,
// dumps, samples and writes checkpoints; every rank evaluates its share of
// the validation micro-batches and multiple-choice examples, combined so
// that all log the same numbers. Checkpoints record the world size and a
// run resumes only on the same one (ckpt::load): another world size would
// sum the gradients in another order and cut the shards into other windows,
// so the run could not continue exactly.
//
// Numerics: W workers equal 1 worker with W times the micro-steps up to the
// order of the f32 gradient sums (test/e2e/data_parallel.py states the
// bound). Under fp8-delayed each rank records its own micro-steps' amaxes
// and the histories are then max-reduced, so the scales of the later
// micro-steps within one step differ from a single process accumulating
// them; tensorwise FP8, bf16 and fp32 do not depend on that.
#ifndef GPTRT_TRAIN_TRAINER_H
#define GPTRT_TRAIN_TRAINER_H

#include "runtime/train/MultipleChoice.h"
#include "runtime/train/Sampler.h"
#include "runtime/train/Schedule.h"

#include <cstdint>
#include <string>

namespace gptrt::dist {
class Communicator;
}

namespace gptrt::train {

struct TrainOptions {
  std::string artifact;
  std::string device = "cpu";
  bool cudaGraphs = false;  ///< --cuda-graphs on (Context::setCudaGraphs)
  /// --attention flash (cuda::Device::setFlashAttention)
  bool flashAttention = false;
  /// --fp8-rowwise-gemm outer-vec (cuda::Device::setRowwiseOuterVecScales)
  bool rowwiseOuterVec = false;
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
  /// Time every runtime call of this step (1-based, as the progress line
  /// counts; 0: none): a table per function, and "profile" in the log.
  int64_t profileStep = 0;
  std::string ckptDir;       ///< where checkpoints go; empty: none
  int64_t ckptEvery = 0;     ///< steps between checkpoints (and one at the end)
  int keep = 0;              ///< newest checkpoints kept; 0: all
  std::string resume;        ///< "latest" (in ckptDir) or a checkpoint path
  /// Replace an earlier run's checkpoints in ckptDir (refused without).
  bool overwrite = false;
};

/// Runs the whole training in this process; throws std::runtime_error with
/// one clear line on bad input. Returns the last training loss.
float train(const TrainOptions &options);

/// The same as rank comm.rank() of comm.worldSize() ranks; every rank calls
/// it with the same options. Returns the last (global mean) training loss.
float train(const TrainOptions &options, dist::Communicator &comm);

/// Every check train() makes before step 0 for rank `rank` of a job of
/// `worldSize` ranks (artifact, batch arithmetic, shards, evaluation files,
/// checkpoint directory, the checkpoint to resume and its world size),
/// without training: a launcher calls it so that bad input is reported
/// once, before any worker starts. Throws std::runtime_error.
void checkTrainOptions(const TrainOptions &options, int worldSize, int rank = 0);

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
