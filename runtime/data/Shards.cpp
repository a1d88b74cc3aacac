// llm.c token shards: header checks, reader, writer and the batch loader
// (format and batching order in Shards.h).
#include "runtime/data/Shards.h"

#include <fcntl.h>
#include <glob.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <stdexcept>

// Shards are little-endian on disk and read by memcpy.
static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
              "token shards assume a little-endian host");

namespace gptrt::data {

namespace fs = std::filesystem;

namespace {

class Fd {
public:
  explicit Fd(const std::string &path) : fd_(::open(path.c_str(), O_RDONLY)) {
    if (fd_ < 0)
      throw std::runtime_error("shard " + path + " cannot be opened (" +
                               std::strerror(errno) +
                               "): check the --data path");
  }
  ~Fd() {
    if (fd_ >= 0)
      ::close(fd_);
  }
  Fd(const Fd &) = delete;
  Fd &operator=(const Fd &) = delete;
  int get() const { return fd_; }

private:
  int fd_;
};

// Reads exactly `bytes` at `offset`; false on a short read.
bool preadAll(int fd, void *dst, size_t bytes, int64_t offset) {
  char *p = static_cast<char *>(dst);
  while (bytes > 0) {
    const ssize_t r = ::pread(fd, p, bytes, static_cast<off_t>(offset));
    if (r < 0 && errno == EINTR)
      continue;
    if (r <= 0)
      return false;
    p += r;
    bytes -= static_cast<size_t>(r);
    offset += r;
  }
  return true;
}

[[noreturn]] void outOfVocabulary(const std::string &path, uint16_t token,
                                  int64_t position, int64_t vocabulary) {
  throw std::runtime_error(
      "shard " + path + " has token " + std::to_string(token) +
      " at position " + std::to_string(position) + ", expected ids below " +
      std::to_string(vocabulary) +
      " (the model's vocabulary): use data tokenized for this model");
}

ShardInfo checkHeader(const std::string &path, int fd) {
  struct stat st;
  if (fstat(fd, &st) != 0)
    throw std::runtime_error("shard " + path + " cannot be inspected (" +
                             std::strerror(errno) + ")");
  const int64_t size = static_cast<int64_t>(st.st_size);
  if (size < kShardHeaderBytes)
    throw std::runtime_error(
        "shard " + path + " has " + std::to_string(size) +
        " bytes, expected at least " + std::to_string(kShardHeaderBytes) +
        " (the 256 x int32 header of an llm.c token shard): regenerate it");
  int32_t header[kShardHeaderInts];
  if (!preadAll(fd, header, sizeof(header), 0))
    throw std::runtime_error("shard " + path +
                             ": cannot read its header: check the file");
  if (header[0] != kShardMagic)
    throw std::runtime_error(
        "shard " + path + " has magic " + std::to_string(header[0]) +
        ", expected " + std::to_string(kShardMagic) +
        " (llm.c token shard): regenerate it with llm.c's data scripts or "
        "gpt-data");
  if (header[1] != kShardVersion)
    throw std::runtime_error(
        "shard " + path + " has version " + std::to_string(header[1]) +
        ", expected " + std::to_string(kShardVersion) +
        " (uint16 GPT-2 tokens): regenerate it with llm.c's data scripts or "
        "gpt-data");
  const int64_t tokens = header[2];
  if (tokens < 0)
    throw std::runtime_error("shard " + path + " has token count " +
                             std::to_string(tokens) +
                             ", expected >= 0: regenerate it");
  const int64_t want = kShardHeaderBytes + 2 * tokens;
  if (size < want)
    throw std::runtime_error(
        "shard " + path + " has " + std::to_string(size) +
        " bytes, expected " + std::to_string(want) + " (header + " +
        std::to_string(tokens) +
        " uint16 tokens, as its header says): the file is truncated; "
        "regenerate or copy it again");
  if (size > want)
    throw std::runtime_error(
        "shard " + path + " has " + std::to_string(size) +
        " bytes, expected " + std::to_string(want) + " (header + " +
        std::to_string(tokens) +
        " uint16 tokens, as its header says): it has trailing bytes; "
        "regenerate it");
  return {path, tokens};
}

void writeAll(const std::string &path, const std::vector<uint16_t> &tokens) {
  if (tokens.size() > static_cast<size_t>(INT32_MAX))
    throw std::runtime_error("shard " + path + " would hold " +
                             std::to_string(tokens.size()) +
                             " tokens, expected at most " +
                             std::to_string(INT32_MAX) +
                             " (int32 count): split the tokens into shards");
  int32_t header[kShardHeaderInts] = {};
  header[0] = kShardMagic;
  header[1] = kShardVersion;
  header[2] = static_cast<int32_t>(tokens.size());
  const std::string tmp = path + ".tmp";
  FILE *f = std::fopen(tmp.c_str(), "wb");
  if (f == nullptr)
    throw std::runtime_error("cannot write shard " + tmp + " (" +
                             std::strerror(errno) +
                             "): check the directory is writable");
  bool ok = std::fwrite(header, sizeof(header), 1, f) == 1;
  if (ok && !tokens.empty())
    ok = std::fwrite(tokens.data(), sizeof(uint16_t), tokens.size(), f) ==
         tokens.size();
  const bool closed = std::fclose(f) == 0;
  if (!ok || !closed) {
    std::remove(tmp.c_str());
    throw std::runtime_error("cannot write shard " + tmp + " (" +
                             std::strerror(errno) + "): check free disk space");
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0)
    throw std::runtime_error("cannot rename " + tmp + " to " + path + " (" +
                             std::strerror(errno) + ")");
}

} // namespace

ShardInfo readShardHeader(const std::string &path) {
  Fd fd(path);
  return checkHeader(path, fd.get());
}

std::vector<uint16_t> readShard(const std::string &path) {
  Fd fd(path);
  const ShardInfo info = checkHeader(path, fd.get());
  std::vector<uint16_t> tokens(static_cast<size_t>(info.tokens));
  if (!tokens.empty() &&
      !preadAll(fd.get(), tokens.data(), tokens.size() * sizeof(uint16_t),
                kShardHeaderBytes))
    throw std::runtime_error("shard " + path + ": cannot read its " +
                             std::to_string(info.tokens) +
                             " tokens: check the file");
  return tokens;
}

void writeShard(const std::string &path, const std::vector<uint16_t> &tokens) {
  writeAll(path, tokens);
}

void writeShardFromIds(const std::string &path,
                       const std::vector<int32_t> &ids) {
  std::vector<uint16_t> tokens(ids.size());
  for (size_t i = 0; i < ids.size(); ++i) {
    if (ids[i] < 0 || ids[i] > 0xFFFF)
      throw std::runtime_error("token " + std::to_string(ids[i]) +
                               " at position " + std::to_string(i) +
                               " is outside [0, 65535], expected a uint16 "
                               "id: shards store GPT-2 sized vocabularies");
    tokens[i] = static_cast<uint16_t>(ids[i]);
  }
  writeAll(path, tokens);
}

std::vector<std::string> globShards(const std::string &pattern) {
  std::vector<std::string> files;
  std::error_code ec;
  if (fs::is_directory(pattern, ec)) {
    for (const auto &entry : fs::directory_iterator(pattern, ec))
      if (entry.path().extension() == ".bin" && !entry.is_directory())
        files.push_back(entry.path().string());
    if (ec)
      throw std::runtime_error("cannot list directory " + pattern + " (" +
                               ec.message() + "): check --data");
    std::sort(files.begin(), files.end());
    if (files.empty())
      throw std::runtime_error("directory " + pattern +
                               " has no *.bin files, expected llm.c token "
                               "shards: check --data");
    return files;
  }
  glob_t g;
  const int rc = ::glob(pattern.c_str(), 0, nullptr, &g);
  if (rc == 0)
    for (size_t i = 0; i < g.gl_pathc; ++i)
      files.push_back(g.gl_pathv[i]);
  globfree(&g);
  if (rc == GLOB_NOMATCH || (rc == 0 && files.empty()))
    throw std::runtime_error("no shard files match '" + pattern +
                             "', expected at least one llm.c token shard: "
                             "check --data (a glob or a directory)");
  if (rc != 0)
    throw std::runtime_error("cannot expand '" + pattern +
                             "' (glob error " + std::to_string(rc) +
                             "): check --data");
  std::sort(files.begin(), files.end());
  return files;
}

DataLoader::DataLoader(const std::vector<std::string> &files, int64_t batch,
                       int64_t seq, int rank, int worldSize)
    : batch_(batch), seq_(seq), rank_(rank), worldSize_(worldSize) {
  if (batch < 1 || seq < 1)
    throw std::runtime_error("batch shape " + std::to_string(batch) + " x " +
                             std::to_string(seq) +
                             " is empty, expected B >= 1 and T >= 1: pass a "
                             "positive batch size and sequence length");
  if (worldSize < 1 || rank < 0 || rank >= worldSize)
    throw std::runtime_error("rank " + std::to_string(rank) + " of world " +
                             std::to_string(worldSize) +
                             ", expected 0 <= rank < world size: check "
                             "RANK and WORLD_SIZE");
  if (files.empty())
    throw std::runtime_error("no shard files given, expected at least one: "
                             "check --data");
  if (batch > INT64_MAX / seq / worldSize - 1)
    throw std::runtime_error("batch " + std::to_string(batch) + " x " +
                             std::to_string(seq) + " x world " +
                             std::to_string(worldSize) +
                             " overflows int64: use a smaller batch");
  const int64_t need = windowTokens() + 1;
  for (const std::string &f : files) {
    ShardInfo info = readShardHeader(f);
    if (info.tokens < need)
      throw std::runtime_error(
          "shard " + f + " has " + std::to_string(info.tokens) +
          " tokens, too small for one batch: expected at least B*T*world+1 = " +
          std::to_string(batch) + "*" + std::to_string(seq) + "*" +
          std::to_string(worldSize) + "+1 = " + std::to_string(need) +
          ": use a smaller batch or sequence length, or larger shards");
    shards_.push_back(std::move(info));
  }
  buffer_.resize(static_cast<size_t>(batch_ * seq_ + 1));
}

DataLoader::DataLoader(const std::string &pattern, int64_t batch, int64_t seq,
                       int rank, int worldSize)
    : DataLoader(globShards(pattern), batch, seq, rank, worldSize) {}

bool DataLoader::windowFits(int64_t shard, int64_t offset) const {
  return offset + windowTokens() + 1 <= shards_[static_cast<size_t>(shard)].tokens;
}

int64_t DataLoader::windowsPerEpoch() const {
  int64_t n = 0;
  for (const ShardInfo &s : shards_)
    n += (s.tokens - 1) / windowTokens();
  return n;
}

Batch DataLoader::next() {
  Batch b;
  next(b);
  return b;
}

void DataLoader::next(Batch &out) {
  if (!windowFits(pos_.shard, pos_.offset)) {
    pos_.offset = 0;
    if (++pos_.shard == static_cast<int64_t>(shards_.size())) {
      pos_.shard = 0;
      ++pos_.epoch;
    }
  }
  const ShardInfo &shard = shards_[static_cast<size_t>(pos_.shard)];
  const int64_t bt = batch_ * seq_;
  const int64_t start = pos_.offset + static_cast<int64_t>(rank_) * bt;
  Fd fd(shard.path);
  if (!preadAll(fd.get(), buffer_.data(), buffer_.size() * sizeof(uint16_t),
                kShardHeaderBytes + 2 * start))
    throw std::runtime_error("shard " + shard.path + ": cannot read " +
                             std::to_string(buffer_.size()) +
                             " tokens at token " + std::to_string(start) +
                             ", expected " + std::to_string(shard.tokens) +
                             " tokens in it: the file changed during the "
                             "run; restore it");
  out.batch = batch_;
  out.seq = seq_;
  out.tokens.resize(static_cast<size_t>(bt));
  out.targets.resize(static_cast<size_t>(bt));
  for (int64_t i = 0; i < bt; ++i) {
    out.tokens[static_cast<size_t>(i)] = buffer_[static_cast<size_t>(i)];
    out.targets[static_cast<size_t>(i)] = buffer_[static_cast<size_t>(i + 1)];
  }
  if (vocabulary_ > 0)
    for (int64_t i = 0; i <= bt; ++i)
      if (buffer_[static_cast<size_t>(i)] >= vocabulary_)
        outOfVocabulary(shard.path, buffer_[static_cast<size_t>(i)], start + i,
                        vocabulary_);
  pos_.offset += windowTokens();
}

void DataLoader::checkVocabulary(int64_t vocabulary) {
  vocabulary_ = vocabulary;
  if (vocabulary <= 0 || vocabulary > 65535)
    return; // uint16 tokens: every id is below 65536
  std::vector<uint16_t> chunk(1 << 20);
  for (const ShardInfo &shard : shards_) {
    Fd fd(shard.path);
    for (int64_t start = 0; start < shard.tokens;
         start += static_cast<int64_t>(chunk.size())) {
      const size_t n = static_cast<size_t>(
          std::min<int64_t>(shard.tokens - start, chunk.size()));
      if (!preadAll(fd.get(), chunk.data(), n * sizeof(uint16_t),
                    kShardHeaderBytes + 2 * start))
        throw std::runtime_error("shard " + shard.path + ": cannot read " +
                                 std::to_string(n) + " tokens at token " +
                                 std::to_string(start) +
                                 ": the file changed; restore it");
      const uint16_t largest = *std::max_element(chunk.begin(), chunk.begin() + n);
      if (largest < vocabulary)
        continue;
      for (size_t i = 0; i < n; ++i)
        if (chunk[i] >= vocabulary)
          outOfVocabulary(shard.path, chunk[i], start + static_cast<int64_t>(i),
                          vocabulary);
    }
  }
}

void DataLoader::restore(const Position &p) {
  if (p.shard < 0 || p.shard >= static_cast<int64_t>(shards_.size()))
    throw std::runtime_error("data position shard " + std::to_string(p.shard) +
                             " is out of range, expected 0.." +
                             std::to_string(shards_.size() - 1) +
                             ": resume with the same --data shards");
  const int64_t tokens = shards_[static_cast<size_t>(p.shard)].tokens;
  if (p.offset < 0 || p.offset > tokens)
    throw std::runtime_error("data position offset " +
                             std::to_string(p.offset) + " in shard " +
                             shards_[static_cast<size_t>(p.shard)].path +
                             " is out of range, expected 0.." +
                             std::to_string(tokens) +
                             " (its tokens): resume with the same --data "
                             "shards");
  if (p.epoch < 0)
    throw std::runtime_error("data position epoch " + std::to_string(p.epoch) +
                             " is negative, expected >= 0: the checkpoint is "
                             "damaged");
  pos_ = p;
}

} // namespace gptrt::data
