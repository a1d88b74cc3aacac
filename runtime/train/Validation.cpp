// Validation loss over a fixed token count (see Validation.h).
#include "runtime/train/Validation.h"

#include "runtime/core/Artifact.h"
#include "runtime/core/Context.h"
#include "runtime/core/Io.h"
#include "runtime/data/Shards.h"
#include "runtime/dist/Communicator.h"
#include "runtime/train/RankSync.h"

#include <stdexcept>

namespace gptrt::train {

ValidationSet::ValidationSet(const std::string &pattern, int64_t seq,
                             int64_t tokens, int64_t vocabulary)
    : seq_(seq), tokens_(tokens) {
  if (seq <= 0)
    throw std::runtime_error("validation rows need a positive sequence "
                             "length, got " + std::to_string(seq));
  if (tokens <= 0)
    throw std::runtime_error("--val-tokens " + std::to_string(tokens) +
                             " must be positive");
  const std::vector<std::string> files = data::globShards(pattern);
  int64_t usable = 0;
  for (const std::string &file : files) {
    if (usable >= tokens)
      break;
    std::vector<uint16_t> shard = data::readShard(file);
    for (size_t i = 0; vocabulary > 0 && i < shard.size(); ++i)
      if (shard[i] >= vocabulary)
        throw std::runtime_error(
            "shard " + file + " has token " + std::to_string(shard[i]) +
            " at position " + std::to_string(i) + ", expected ids below " +
            std::to_string(vocabulary) +
            " (the model's vocabulary): use data tokenized for this model");
    // Row r needs tokens r*T .. r*T+T: T inputs and T targets shifted by one.
    for (int64_t start = 0;
         start + seq + 1 <= static_cast<int64_t>(shard.size()) && usable < tokens;
         start += seq) {
      for (int64_t i = 0; i < seq; ++i) {
        inputs_.push_back(shard[start + i]);
        targets_.push_back(usable < tokens ? shard[start + i + 1] : -1);
        ++usable;
      }
    }
  }
  if (usable < tokens)
    throw std::runtime_error(
        "--val-data " + pattern + " holds " + std::to_string(usable) +
        " target tokens in rows of " + std::to_string(seq) + " (" +
        std::to_string(files.size()) + " shard(s)), --val-tokens asks for " +
        std::to_string(tokens) + ": lower --val-tokens or add validation data");
}

float validationLoss(const Artifact &artifact, Context &ctx,
                     const ValidationSet &set, dist::Communicator *comm) {
  const int world = comm ? comm->worldSize() : 1;
  const int rank = comm ? comm->rank() : 0;
  const auto &manifest = artifact.manifest();
  const int64_t B = manifest.micro_batch(), T = manifest.seq();
  if (set.seq() != T)
    throw std::runtime_error(
        "validation rows of " + std::to_string(set.seq()) +
        " tokens do not match the sequence length " + std::to_string(T) +
        " compiled into " + artifact.path());
  std::vector<int32_t> tokens(B * T), targets(B * T);
  double weighted = 0;
  int64_t counted = 0;
  for (int64_t first = rank * B; first < set.rows(); first += world * B) {
    // Rows past the end pad the last micro-batch: token 0, nothing counted.
    int64_t count = 0;
    for (int64_t i = 0; i < B * T; ++i) {
      int64_t at = first * T + i;
      bool real = at < set.rows() * T;
      tokens[i] = real ? set.inputs()[at] : 0;
      targets[i] = real ? set.targets()[at] : -1;
      count += targets[i] >= 0;
    }
    writeBatch(ctx, manifest, EntryKind::EvalStep, tokens.data(),
               targets.data(), B, T);
    artifact.run(EntryKind::EvalStep, ctx);
    // eval_step's loss is the mean over the micro-batch's counted targets.
    weighted += static_cast<double>(
                    readScalarOutput(ctx, manifest, EntryKind::EvalStep, "loss")) *
                count;
    counted += count;
  }
  if (world > 1) {
    weighted = sumOverRanks(*comm, weighted);
    counted = static_cast<int64_t>(sumOverRanks(*comm, static_cast<double>(counted)));
  }
  return static_cast<float>(weighted / counted);
}

} // namespace gptrt::train
