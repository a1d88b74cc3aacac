// Writing a tokenised corpus (val shard, train shards, manifest) and reading
// its manifest back; layout in Corpus.h.
#include "runtime/data/Corpus.h"

#include "runtime/data/Sha256.h"
#include "runtime/data/Shards.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace gptrt::data {

namespace fs = std::filesystem;

namespace {

bool isCorpusFile(const std::string &name) {
  auto shard = [&](const char *prefix) {
    const size_t n = std::strlen(prefix);
    return name.size() > n + 4 && name.compare(0, n, prefix) == 0 &&
           name.compare(name.size() - 4, 4, ".bin") == 0;
  };
  return name == kManifestName || shard("val_") || shard("train_");
}

std::string shardName(const char *split, int64_t index) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%s_%06lld.bin", split,
                static_cast<long long>(index));
  return buf;
}

} // namespace

CorpusWriter::CorpusWriter(std::string dir, int64_t shardTokens,
                           int64_t valTokens, int32_t endOfText, bool replace)
    : dir_(std::move(dir)), shardTokens_(shardTokens), valTokens_(valTokens),
      endOfText_(endOfText), valDone_(valTokens == 0) {
  if (shardTokens < 1 || shardTokens > INT32_MAX)
    throw std::runtime_error(
        "--shard-tokens " + std::to_string(shardTokens) +
        " is out of range, expected 1.." + std::to_string(INT32_MAX) +
        " (tokens per train shard; llm.c uses 100000000)");
  if (valTokens < 0 || valTokens > INT32_MAX)
    throw std::runtime_error("--val-tokens " + std::to_string(valTokens) +
                             " is out of range, expected 0.." +
                             std::to_string(INT32_MAX) +
                             " (tokens in the val shard; 0 for none)");
  if (endOfText < 0 || endOfText > 0xFFFF)
    throw std::runtime_error("<|endoftext|> id " + std::to_string(endOfText) +
                             " does not fit a uint16 shard, expected a "
                             "GPT-2 sized vocabulary");
  std::error_code ec;
  fs::create_directories(dir_, ec);
  if (ec || !fs::is_directory(dir_))
    throw std::runtime_error("cannot create output directory " + dir_ + " (" +
                             (ec ? ec.message() : "not a directory") +
                             "): check -o");
  std::vector<fs::path> old;
  for (const auto &entry : fs::directory_iterator(dir_, ec))
    if (isCorpusFile(entry.path().filename().string()))
      old.push_back(entry.path());
  if (ec)
    throw std::runtime_error("cannot list " + dir_ + " (" + ec.message() +
                             "): check -o");
  if (!old.empty() && !replace)
    throw std::runtime_error(
        "output directory " + dir_ + " already holds a corpus (" +
        old.front().filename().string() +
        "), expected none: choose an empty directory, or pass --force to "
        "replace its shards and manifest");
  for (const fs::path &p : old)
    if (!fs::remove(p, ec) || ec)
      throw std::runtime_error("cannot delete " + p.string() + " (" +
                               ec.message() + ") to replace it");
  buffer_.reserve(static_cast<size_t>(
      std::min<int64_t>(valDone_ ? shardTokens_ : valTokens_, 1 << 26)));
}

void CorpusWriter::beginDocument() {
  ++documents_;
  add({endOfText_});
}

void CorpusWriter::add(const std::vector<int32_t> &ids) {
  for (int32_t id : ids) {
    if (id < 0 || id > 0xFFFF)
      throw std::runtime_error("token " + std::to_string(id) +
                               " is outside [0, 65535], expected a uint16 "
                               "id: shards store GPT-2 sized vocabularies");
    buffer_.push_back(static_cast<uint16_t>(id));
    ++total_;
    if (static_cast<int64_t>(buffer_.size()) ==
        (valDone_ ? shardTokens_ : valTokens_))
      flush();
  }
}

void CorpusWriter::flush() {
  const std::string name =
      valDone_ ? shardName("train", trainShards_++) : shardName("val", 0);
  const std::string path = (fs::path(dir_) / name).string();
  writeShard(path, buffer_);
  shards_.push_back({name, static_cast<int64_t>(buffer_.size()),
                     sha256File(path)});
  buffer_.clear();
  valDone_ = true;
}

const std::vector<ShardRecord> &CorpusWriter::finish() {
  if (finished_)
    return shards_;
  if (total_ == 0)
    throw std::runtime_error("the input has no tokens, expected at least "
                             "one document: check the input files");
  if (!valDone_ || (trainShards_ == 0 && buffer_.empty()))
    throw std::runtime_error(
        "the input has " + std::to_string(total_) +
        " tokens, all of them for the val shard (--val-tokens " +
        std::to_string(valTokens_) + "), expected more than " +
        std::to_string(valTokens_) +
        " so that a train shard remains: lower --val-tokens or add text");
  if (!buffer_.empty())
    flush();
  const std::string path = (fs::path(dir_) / kManifestName).string();
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << "# gpt-data corpus: " << shards_.size() << " shards, " << total_
        << " tokens, " << documents_
        << " documents (each starts with <|endoftext|>)\n"
        << "# shard tokens sha256\n";
    for (const ShardRecord &s : shards_)
      out << s.name << ' ' << s.tokens << ' ' << s.sha256 << '\n';
    out.close();
    if (!out)
      throw std::runtime_error("cannot write " + tmp + " (" +
                               std::strerror(errno) +
                               "): check free disk space");
  }
  std::error_code ec;
  fs::rename(tmp, path, ec);
  if (ec)
    throw std::runtime_error("cannot rename " + tmp + " to " + path + " (" +
                             ec.message() + ")");
  finished_ = true;
  return shards_;
}

std::vector<ShardRecord> readManifest(const std::string &dir) {
  const std::string path = (fs::path(dir) / kManifestName).string();
  std::ifstream in(path);
  if (!in)
    throw std::runtime_error("cannot read " + path + " (" +
                             std::strerror(errno) +
                             "): it is written by gpt-data encode");
  std::vector<ShardRecord> out;
  std::string line;
  for (int n = 1; std::getline(in, line); ++n) {
    if (line.empty() || line[0] == '#')
      continue;
    std::istringstream fields(line);
    ShardRecord r;
    std::string extra;
    if (!(fields >> r.name >> r.tokens >> r.sha256) || (fields >> extra) ||
        r.tokens < 0 || r.sha256.size() != 64)
      throw std::runtime_error(path + ": line " + std::to_string(n) + " (\"" +
                               line +
                               "\") is not 'SHARD TOKENS SHA256': the "
                               "manifest is damaged; rerun gpt-data encode");
    out.push_back(std::move(r));
  }
  return out;
}

} // namespace gptrt::data
