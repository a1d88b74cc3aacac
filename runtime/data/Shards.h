// llm.c token shards: reading, writing and batching them.
//
// Shard format (as llm.c's dev/data scripts write it and its
// llmc/dataloader.h reads it): a header of 256 little-endian int32 --
// [0] magic 20240520, [1] version 1, [2] token count N, the rest zero --
// followed by N uint16 GPT-2 token ids.
//
// Batching follows llm.c's DataLoader layout, so a run reads the tokens in
// the same order llm.c would: the shards in sorted-name order, each cut into
// consecutive global windows of B*T*worldSize tokens; rank r takes the
// B*T+1 tokens at window + r*B*T (inputs are its first B*T, targets the
// same shifted by one). A window that would need more tokens than the shard
// has left moves on to the next shard; after the last shard the order starts
// again at shard 0 (no shuffling, so every run sees the same order).
#ifndef GPTRT_DATA_SHARDS_H
#define GPTRT_DATA_SHARDS_H

#include <cstdint>
#include <string>
#include <vector>

namespace gptrt::data {

constexpr int32_t kShardMagic = 20240520;
constexpr int32_t kShardVersion = 1;
constexpr int64_t kShardHeaderInts = 256;
constexpr int64_t kShardHeaderBytes = kShardHeaderInts * 4;

struct ShardInfo {
  std::string path;
  int64_t tokens = 0;
};

// Reads and checks the header and the file size. Throws std::runtime_error
// for a missing/short file, a bad magic (expected and found), an unsupported
// version, a negative count, or a file shorter or longer than the header
// says.
ShardInfo readShardHeader(const std::string &path);

// Every token of a shard, checked as readShardHeader does.
std::vector<uint16_t> readShard(const std::string &path);

// Writes a shard (via a temporary file and a rename, so readers never see a
// partial one). Throws std::runtime_error on I/O errors or more than
// INT32_MAX tokens.
void writeShard(const std::string &path, const std::vector<uint16_t> &tokens);
// From int32 ids; throws std::runtime_error for an id outside [0, 65535].
void writeShardFromIds(const std::string &path,
                       const std::vector<int32_t> &ids);

// The shard files named by `pattern`: a glob(7) pattern ("data/train_*.bin")
// or a directory (all its *.bin files), sorted by name. Throws
// std::runtime_error when nothing matches.
std::vector<std::string> globShards(const std::string &pattern);

// Where the loader is: the shard and the token offset of the next global
// window in it (the same on every rank), plus how many times the shard list
// was restarted. Saved in checkpoints; restoring it on another world size
// continues from the same token.
struct Position {
  int64_t shard = 0;
  int64_t offset = 0;
  int64_t epoch = 0;
  bool operator==(const Position &o) const {
    return shard == o.shard && offset == o.offset && epoch == o.epoch;
  }
};

struct Batch {
  int64_t batch = 0; // B
  int64_t seq = 0;   // T
  std::vector<int32_t> tokens;  // [B, T]
  std::vector<int32_t> targets; // [B, T], tokens shifted by one
};

class DataLoader {
public:
  // Checks every shard up front: the header (readShardHeader), and that it
  // holds at least one global window plus one token, B*T*worldSize + 1.
  // Throws std::runtime_error naming the value, expected and found, and the
  // fix (bad B/T/rank/worldSize included).
  DataLoader(const std::vector<std::string> &files, int64_t batch, int64_t seq,
             int rank = 0, int worldSize = 1);
  // Files from globShards(pattern).
  DataLoader(const std::string &pattern, int64_t batch, int64_t seq,
             int rank = 0, int worldSize = 1);

  // This rank's next batch; advances the position by one global window.
  Batch next();
  void next(Batch &out);

  Position position() const { return pos_; }
  // Throws std::runtime_error unless the position is one this loader can
  // reach: shard index in range and a full window left at offset.
  void restore(const Position &position);
  void reset() { pos_ = Position{}; }

  // Reads every shard now and throws, naming the shard, position and
  // token, if one holds a token >= `vocabulary` (the model's): found before
  // the first step, not when training reaches its window. From then on
  // next() checks each window it reads too (0: no checks).
  void checkVocabulary(int64_t vocabulary);

  const std::vector<ShardInfo> &shards() const { return shards_; }
  int64_t batchSize() const { return batch_; }
  int64_t seqLen() const { return seq_; }
  int rank() const { return rank_; }
  int worldSize() const { return worldSize_; }
  // Tokens of one global window, B*T*worldSize.
  int64_t windowTokens() const { return batch_ * seq_ * worldSize_; }
  // Global windows in one pass over all shards.
  int64_t windowsPerEpoch() const;

private:
  bool windowFits(int64_t shard, int64_t offset) const;

  std::vector<ShardInfo> shards_;
  int64_t batch_, seq_;
  int rank_, worldSize_;
  Position pos_;
  int64_t vocabulary_ = 0;
  std::vector<uint16_t> buffer_;
};

} // namespace gptrt::data

#endif // GPTRT_DATA_SHARDS_H
