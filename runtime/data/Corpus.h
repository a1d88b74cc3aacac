// A tokenised corpus on disk, as gpt-data writes it: llm.c token shards
// (Shards.h) in one directory -- val_000000.bin first, then train_000000.bin,
// train_000001.bin, ... -- and a manifest.txt naming each shard with its
// token count and SHA-256. Documents follow each other in the token stream,
// each starting with <|endoftext|> (as llm.c's data scripts write them); a
// shard boundary may fall inside a document.
#ifndef GPTRT_DATA_CORPUS_H
#define GPTRT_DATA_CORPUS_H

#include <cstdint>
#include <string>
#include <vector>

namespace gptrt::data {

struct ShardRecord {
  std::string name; // file name inside the corpus directory
  int64_t tokens = 0;
  std::string sha256; // of the whole file, as sha256sum prints it
};

constexpr const char *kManifestName = "manifest.txt";

class CorpusWriter {
public:
  // Checks the sizes (shardTokens in [1, INT32_MAX], valTokens in
  // [0, INT32_MAX]; 0 means no val shard) and creates `dir`. Unless
  // `replace`, refuses a directory that already holds shards or a manifest,
  // so that an old run's extra shards never mix in; with it, deletes them.
  // Throws std::runtime_error naming the value and the fix.
  CorpusWriter(std::string dir, int64_t shardTokens, int64_t valTokens,
               int32_t endOfText, bool replace = false);

  // Starts a document: appends <|endoftext|>.
  void beginDocument();
  // Appends token ids; throws for an id outside [0, 65535].
  void add(const std::vector<int32_t> &ids);

  // Writes what is left as the last shard and then the manifest. Throws
  // when no train token would be written (all went to the val shard).
  const std::vector<ShardRecord> &finish();

  int64_t tokens() const { return total_; }
  int64_t documents() const { return documents_; }
  const std::string &dir() const { return dir_; }

private:
  void flush();

  std::string dir_;
  int64_t shardTokens_, valTokens_;
  int32_t endOfText_;
  std::vector<uint16_t> buffer_;
  std::vector<ShardRecord> shards_;
  int64_t total_ = 0, documents_ = 0, trainShards_ = 0;
  bool valDone_;
  bool finished_ = false;
};

// The manifest in `dir` (dir/manifest.txt). Throws std::runtime_error when
// it is missing or a line is malformed.
std::vector<ShardRecord> readManifest(const std::string &dir);

} // namespace gptrt::data

#endif // GPTRT_DATA_CORPUS_H
