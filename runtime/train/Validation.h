// Validation loss over a fixed number of held-out tokens, the same whatever
// micro-batch the artifact was compiled with: the tokens are cut into rows
// of the compiled sequence length exactly as the training loader cuts them
// (row r of a shard holds tokens r*T .. r*T+T), and rows that fill up the
// last micro-batch -- and targets past the requested count -- are marked
// ignored (target -1, which the compiled cross-entropy skips). The loss is
// the mean over exactly the requested target tokens.
//
// Caveat: fp8-tensorwise scales each GEMM operand by the amax of the whole
// micro-batch, so its numbers depend (slightly) on which rows share one.
#ifndef GPTRT_TRAIN_VALIDATION_H
#define GPTRT_TRAIN_VALIDATION_H

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

class ValidationSet {
public:
  /// The first `tokens` target tokens of the shards named by `pattern`, in
  /// rows of `seq`. Throws std::runtime_error (naming the shards, what they
  /// hold and the fix) when they hold fewer, or a token >= `vocabulary`
  /// (when positive).
  ValidationSet(const std::string &pattern, int64_t seq, int64_t tokens,
                int64_t vocabulary = 0);

  int64_t tokens() const { return tokens_; }
  int64_t rows() const { return static_cast<int64_t>(inputs_.size()) / seq_; }
  int64_t seq() const { return seq_; }
  /// Row-major [rows, seq]; targets past tokens() are -1.
  const std::vector<int32_t> &inputs() const { return inputs_; }
  const std::vector<int32_t> &targets() const { return targets_; }

private:
  int64_t seq_, tokens_;
  std::vector<int32_t> inputs_, targets_;
};

/// Mean eval_step loss of `artifact` (with the parameters in `ctx`) over
/// every target token of `set`. Throws when the set's row length is not the
/// artifact's sequence length. With a communicator of several ranks (a
/// collective: every rank calls it) each rank evaluates every world-th
/// micro-batch and the sums are added across ranks: the same micro-batches
/// as one rank evaluates, so the same loss up to the order of a double sum.
float validationLoss(const Artifact &artifact, Context &ctx,
                     const ValidationSet &set,
                     dist::Communicator *comm = nullptr);

} // namespace gptrt::train

#endif // GPTRT_TRAIN_VALIDATION_H
