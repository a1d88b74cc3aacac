// What the ranks of a data-parallel run exchange through the Communicator
// (runtime/dist/Communicator.h), step by step:
//   - the gradient arena, summed: each rank ran its micro-steps with the loss
//     scale 1 / (micro-steps x world), so the sum is the mean over the global
//     batch and optimizer_step sees the same gradients on every rank;
//   - FP8 delayed-scaling amax histories, element-wise max, so every rank
//     derives the same scales (TransformerEngine's amax reduction);
//   - the per-rank loss sums, gathered, for the global mean loss;
//   - FP8 cast statistics (--fp8-stats-every), for the global picture;
//   - bytes and arenas from rank 0 (resuming: rank 0 reads the checkpoint and
//     the others receive it, so no shared file system is needed);
//   - a fingerprint of the run, so ranks started with different artifacts or
//     options stop at once with a reason instead of summing unrelated buffers.
// Every function is a collective: all ranks call it, in the same order.
#ifndef GPTRT_TRAIN_RANKSYNC_H
#define GPTRT_TRAIN_RANKSYNC_H

#include "runtime/core/Context.h"

#include <cstdint>
#include <string>
#include <vector>

namespace gptc::manifest {
class Manifest;
}

namespace gptrt::dist {
class Communicator;
}

namespace gptrt::train {

/// Sums the manifest's GRADS arena (one contiguous f32 block) over ranks.
void allReduceGradients(dist::Communicator &comm,
                        const gptc::manifest::Manifest &manifest, Context &ctx);

/// Element-wise max of the FP8_STATE arena (f32 amax histories) over ranks;
/// nothing when the artifact has no such arena.
void allReduceFp8State(dist::Communicator &comm,
                       const gptc::manifest::Manifest &manifest, Context &ctx);

/// The sum of every rank's `local`, identical on every rank: gathered as
/// two floats each (high and low part) and added in rank order in double.
double sumOverRanks(dist::Communicator &comm, double local);

/// The mean loss over the global batch, identical on every rank: each
/// rank's `localLossSum` (the sum of its `microSteps` micro-step losses) is
/// gathered as two floats (high and low part, so nothing of the double is
/// lost to f32) and summed in rank order in double precision.
double globalMeanLoss(dist::Communicator &comm, double localLossSum,
                      int64_t microSteps);

/// Combines each rank's FP8 statistics: amax is the max over ranks, the
/// counts are sums; the scale stays this rank's (under delayed scaling all
/// ranks use the same one).
void reduceFp8Stats(dist::Communicator &comm, std::vector<Fp8CastStats> &stats);

/// Rank `root`'s `bytes` on every rank (any size below 16 MiB).
void broadcastBytes(dist::Communicator &comm, std::string &bytes, int root);

/// Rank 0's contents of every persistent arena (parameters, optimizer
/// moments, FP8 state) on every rank.
void broadcastPersistentArenas(dist::Communicator &comm,
                               const gptc::manifest::Manifest &manifest,
                               Context &ctx);

/// ZeRO-1: the whole optimizer arena (every gradient element's first
/// moment, then every second moment: the unsharded layout checkpoints
/// hold) assembled from every rank's shard, on every rank.
std::string gatherOptimizer(dist::Communicator &comm, const Context &ctx);

/// Throws on every rank, naming what differs on which rank, unless every
/// rank passed the same `fingerprint` (a description of the artifact and
/// the options that must agree).
void checkSameRun(dist::Communicator &comm, const std::string &fingerprint);

} // namespace gptrt::train

#endif // GPTRT_TRAIN_RANKSYNC_H
