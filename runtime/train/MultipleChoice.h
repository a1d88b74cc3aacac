// Multiple-choice evaluation (HellaSwag style) from llm.c's eval-file
// format: for each example, the completion whose tokens the model finds
// likeliest after the context is its answer.
//
// File format (llm.c dev/data/data_common.py write_evalfile, and
// llmc/dataloader.h's EvalLoader): a header of 256 little-endian int32 --
// [0] magic 20240522, [1] version 1, [2] number of examples, [3] bytes of
// the longest example -- then per example a stream of uint16:
//   65535 (start of example), bytes of this example (the whole stream,
//   this header included), example index, label (index of the right
//   completion), number of completions, context length, context tokens,
//   and per completion its length and tokens.
//
// Scoring, as llm.c's hellaswag.py: each completion's cross-entropy over
// its own tokens; `acc` picks the smallest sum, `acc_norm` (the number
// HellaSwag reports) the smallest mean per token.
#ifndef GPTRT_TRAIN_MULTIPLECHOICE_H
#define GPTRT_TRAIN_MULTIPLECHOICE_H

#include <cstdint>
#include <string>
#include <vector>

namespace gptrt {
class Artifact;
class Context;
} // namespace gptrt

namespace gptrt::dist {
class Communicator;
}

namespace gptrt::train {

constexpr int32_t kEvalFileMagic = 20240522;
constexpr int32_t kEvalFileVersion = 1;

struct ChoiceExample {
  int64_t index = 0;
  int64_t label = 0;
  std::vector<int32_t> context;
  std::vector<std::vector<int32_t>> completions;
};

/// Every example of an eval file. Throws std::runtime_error naming the file,
/// the example and what is wrong (bad magic with expected and found,
/// truncation, a label outside the completions, ...).
std::vector<ChoiceExample> readChoiceFile(const std::string &path);


struct ChoiceScore {
  int64_t examples = 0;
  int64_t correct = 0;      ///< smallest summed loss is the label
  int64_t correctNorm = 0;  ///< smallest mean loss is the label
  /// Per example and completion: the mean loss over the completion's tokens.
  std::vector<std::vector<double>> meanLoss;
  double accuracy() const { return examples ? double(correct) / examples : 0; }
  double accuracyNorm() const {
    return examples ? double(correctNorm) / examples : 0;
  }
};

/// Scores the first `limit` examples (0: all) through the artifact's
/// compiled logits entry, B rows (one completion each) per call. Throws when
/// an example does not fit the compiled sequence length or names tokens
/// outside the model's vocabulary. With a communicator of several ranks (a
/// collective) each rank scores every world-th example and the counts are
/// added across ranks; meanLoss then holds this rank's examples only.
ChoiceScore scoreChoices(const Artifact &artifact, Context &ctx,
                         const std::vector<ChoiceExample> &examples,
                         int64_t limit = 0,
                         dist::Communicator *comm = nullptr);

} // namespace gptrt::train

#endif // GPTRT_TRAIN_MULTIPLECHOICE_H
