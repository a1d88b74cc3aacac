// gptrun checkpoints: the persistent arenas (parameters, AdamW moments, FP8
// state) as raw files plus a protobuf index (step, data position, manifest
// hash, run configuration), written to a temporary directory, fsynced and
// renamed, so a crash never leaves a broken checkpoint under its final name.
#ifndef GPTRT_CKPT_CHECKPOINT_H
#define GPTRT_CKPT_CHECKPOINT_H

#include "runtime/ckpt/checkpoint.pb.h"

#include <string>
#include <vector>
#include <string_view>

namespace gptc::manifest {
class Manifest;
}

namespace gptrt {
class Context;
}

namespace gptrt::ckpt {

/// fnv1a64 of the serialized manifest: a checkpoint only resumes on an
/// artifact whose manifest is byte-for-byte the same.
uint64_t manifestHash(const gptc::manifest::Manifest &manifest);

/// Creates `dir` if needed and proves a file can be written there, so that
/// a bad --ckpt-dir fails before training rather than at the first save.
void checkWritable(const std::string &dir);

/// The rule for a run's --ckpt-dir: checkpoints of an earlier run there
/// are refused (naming them) unless the run resumes from one of them
/// (`resumedFrom`, a checkpoint path, inside `dir`) or `overwrite` is set,
/// in which case they are removed (a line saying so is returned, for the
/// run's log). Pruning by step number is only sound within one run's line
/// of checkpoints.
std::vector<std::string> claimDirectory(const std::string &dir,
                                        const std::string &resumedFrom,
                                        bool overwrite);

/// Writes DIR/step_NNNNNNNN (atomically) and points DIR/latest at it; keeps
/// the `keep` newest checkpoints (0: all; never the one just written). A
/// write that fails removes its temporary files before it throws, so that
/// they do not take the room the next write needs. Returns the
/// checkpoint's path.
/// A context whose optimizer is sharded (ZeRO-1) needs `unshardedOptimizer`:
/// the whole optimizer arena as one rank would hold it (RankSync's
/// gatherOptimizer), written in place of this rank's shard, so that the
/// checkpoint is the same whatever the sharding.
std::string save(const std::string &dir, const gptc::manifest::Manifest &manifest,
                 const Context &ctx, gptc::checkpoint::Checkpoint index,
                 int keep, std::string_view unshardedOptimizer = {});

/// The checkpoint `path` names: a checkpoint directory, or a checkpoint
/// root whose `latest` file names one of its own subdirectories (a name
/// with a '/' or "..", which would lead elsewhere, is refused).
std::string resolve(const std::string &path);

/// The index of the checkpoint at `path` (a checkpoint directory), without
/// its arenas: what a launcher checks before starting workers. Throws
/// std::runtime_error when it is missing, unreadable or of another format.
gptc::checkpoint::Checkpoint readIndex(const std::string &path);

/// Reads the index and restores the arenas into `ctx`. Refuses (with the
/// reason and the fix) a checkpoint of another manifest or world size, or
/// whose files are missing, short or corrupt.
gptc::checkpoint::Checkpoint load(const std::string &path,
                                  const gptc::manifest::Manifest &manifest,
                                  Context &ctx, int worldSize);

} // namespace gptrt::ckpt

#endif // GPTRT_CKPT_CHECKPOINT_H
