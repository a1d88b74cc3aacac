// gptrun checkpoints: the persistent arenas (parameters, AdamW moments, FP8
// state) as raw files plus a protobuf index (step, data position, manifest
// hash, run configuration), written to a temporary directory, fsynced and
// renamed, so a crash never leaves a broken checkpoint under its final name.
#ifndef GPTRT_CKPT_CHECKPOINT_H
#define GPTRT_CKPT_CHECKPOINT_H

#include "runtime/ckpt/checkpoint.pb.h"

#include <string>
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

/// Writes DIR/step_NNNNNNNN (atomically) and points DIR/latest at it; keeps
/// the `keep` newest checkpoints (0: all). Returns the checkpoint's path.
/// A context whose optimizer is sharded (ZeRO-1) needs `unshardedOptimizer`:
/// the whole optimizer arena as one rank would hold it (RankSync's
/// gatherOptimizer), written in place of this rank's shard, so that the
/// checkpoint is the same whatever the sharding.
std::string save(const std::string &dir, const gptc::manifest::Manifest &manifest,
                 const Context &ctx, gptc::checkpoint::Checkpoint index,
                 int keep, std::string_view unshardedOptimizer = {});

/// The checkpoint `path` names: a checkpoint directory, or a checkpoint
/// root whose `latest` file names one.
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
