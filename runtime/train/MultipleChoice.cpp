// Multiple-choice evaluation from llm.c eval files (see MultipleChoice.h).
#include "runtime/train/MultipleChoice.h"

#include "runtime/core/Artifact.h"
#include "runtime/core/Context.h"
#include "runtime/core/Io.h"
#include "runtime/core/ManifestCheck.h"
#include "runtime/dist/Communicator.h"
#include "runtime/train/RankSync.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <fstream>
#include <iterator>
#include <stdexcept>

namespace gptrt::train {

namespace {

constexpr int64_t kHeaderInts = 256;
constexpr uint16_t kStartOfExample = 65535;

[[noreturn]] void fail(const std::string &path, const std::string &what) {
  throw std::runtime_error("eval file " + path + " " + what);
}

/// Reads uint16 values of one example, failing with the example's number
/// when the stream runs out.
class ExampleReader {
public:
  ExampleReader(const std::string &path, const std::vector<uint16_t> &words,
                size_t at, int64_t example)
      : path_(path), words_(words), at_(at), example_(example) {}

  uint16_t next(const char *what) {
    if (at_ >= words_.size())
      fail(path_, "is truncated in example " + std::to_string(example_) +
                      " (reading its " + what + "): it ends after " +
                      std::to_string(kHeaderInts * 4 + words_.size() * 2) +
                      " bytes");
    return words_[at_++];
  }
  std::vector<int32_t> tokens(const char *what) {
    uint16_t count = next(what);
    std::vector<int32_t> out(count);
    for (auto &token : out)
      token = next(what);
    return out;
  }
  size_t at() const { return at_; }

private:
  const std::string &path_;
  const std::vector<uint16_t> &words_;
  size_t at_;
  int64_t example_;
};

} // namespace

std::vector<ChoiceExample> readChoiceFile(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    throw std::runtime_error("eval file " + path + " cannot be opened (" +
                             std::strerror(errno) + "): check the path");
  std::string bytes((std::istreambuf_iterator<char>(in)),
                    std::istreambuf_iterator<char>());
  if (bytes.size() < kHeaderInts * 4)
    fail(path, "has " + std::to_string(bytes.size()) +
                   " bytes, expected at least 1024 (the 256 x int32 header of "
                   "an llm.c eval file)");
  int32_t header[kHeaderInts];
  std::memcpy(header, bytes.data(), sizeof(header));
  if (header[0] != kEvalFileMagic)
    fail(path, "has magic " + std::to_string(header[0]) + ", expected " +
                   std::to_string(kEvalFileMagic) +
                   " (llm.c multiple-choice eval file; 20240520 is a token "
                   "shard, for --val-data)");
  if (header[1] != kEvalFileVersion)
    fail(path, "has version " + std::to_string(header[1]) +
                   ", expected 1 (uint16 GPT-2 tokens)");
  if (header[2] < 0 || header[3] < 0)
    fail(path, "has " + std::to_string(header[2]) + " examples of at most " +
                   std::to_string(header[3]) +
                   " bytes in its header, expected counts >= 0");
  if ((bytes.size() - sizeof(header)) % 2 != 0)
    fail(path, "has an odd number of bytes after its header, expected uint16 "
               "values: the file is damaged");
  std::vector<uint16_t> words((bytes.size() - sizeof(header)) / 2);
  std::memcpy(words.data(), bytes.data() + sizeof(header), words.size() * 2);

  std::vector<ChoiceExample> examples(header[2]);
  size_t at = 0;
  for (int64_t i = 0; i < header[2]; ++i) {
    ExampleReader r(path, words, at, i);
    const std::string where = "example " + std::to_string(i);
    if (uint16_t start = r.next("start marker"); start != kStartOfExample)
      fail(path, where + " starts with " + std::to_string(start) +
                     ", expected the marker 65535: the file is damaged or "
                     "its header's example count is wrong");
    uint16_t exampleBytes = r.next("size");
    ChoiceExample &e = examples[i];
    e.index = r.next("index");
    e.label = r.next("label");
    uint16_t completions = r.next("completion count");
    if (completions < 2)
      fail(path, where + " has " + std::to_string(completions) +
                     " completion(s), expected at least 2");
    if (e.label >= completions)
      fail(path, where + " has label " + std::to_string(e.label) +
                     ", expected an index below its " +
                     std::to_string(completions) + " completions");
    e.context = r.tokens("context");
    for (uint16_t c = 0; c < completions; ++c) {
      e.completions.push_back(r.tokens("completions"));
      if (e.completions.back().empty())
        fail(path, where + " has an empty completion " + std::to_string(c) +
                       ", expected at least one token");
    }
    size_t read = (r.at() - at) * 2;
    if (read != exampleBytes)
      fail(path, where + " holds " + std::to_string(read) +
                     " bytes but says " + std::to_string(exampleBytes) +
                     ": the file is damaged");
    if (static_cast<int64_t>(exampleBytes) > header[3])
      fail(path, where + " has " + std::to_string(exampleBytes) +
                     " bytes, more than the header's longest example (" +
                     std::to_string(header[3]) + ")");
    at = r.at();
  }
  if (at != words.size())
    fail(path, "has " + std::to_string((words.size() - at) * 2) +
                   " bytes after its " + std::to_string(header[2]) +
                   " examples, expected none: the header's example count is "
                   "wrong or the file is damaged");
  return examples;
}

ChoiceScore scoreChoices(const Artifact &artifact, Context &ctx,
                         const std::vector<ChoiceExample> &all, int64_t limit,
                         dist::Communicator *comm) {
  const int world = comm ? comm->worldSize() : 1;
  const int rank = comm ? comm->rank() : 0;
  const auto &manifest = artifact.manifest();
  if (!artifact.hasEntry(EntryKind::Logits))
    throw std::runtime_error("artifact " + artifact.path() +
                             " has no logits entry point: compile it with a "
                             "gptc that emits one");
  const gptc::manifest::NamedBuffer *out =
      findBuffer(entrySpec(manifest, EntryKind::Logits).outputs(), "logits");
  if (!out)
    throw std::runtime_error("artifact " + artifact.path() +
                             " binds no \"logits\" output");
  const int64_t B = manifest.micro_batch(), T = manifest.seq();
  const int64_t vocab = manifest.model().vocab();
  const int64_t padded = manifest.model().padded_vocab();
  const int64_t count = limit > 0 ? std::min<int64_t>(limit, all.size())
                                  : static_cast<int64_t>(all.size());

  // One row per (example, completion): the context, then the completion.
  struct Row {
    int64_t example, completion;
  };
  std::vector<Row> rows;
  for (int64_t i = 0; i < count; ++i) {
    const ChoiceExample &e = all[i];
    for (size_t c = 0; c < e.completions.size(); ++c) {
      int64_t length = e.context.size() + e.completions[c].size();
      if (e.context.empty() || length > T)
        throw std::runtime_error(
            "multiple-choice example " + std::to_string(i) + " (index " +
            std::to_string(e.index) + ") has " +
            std::to_string(e.context.size()) + " context and " +
            std::to_string(e.completions[c].size()) +
            " completion tokens, expected at least one context token and at "
            "most " + std::to_string(T) +
            " in all (the compiled sequence length): compile with a longer "
            "--seq or drop the example");
      for (const auto *tokens : {&e.context, &e.completions[c]})
        for (int32_t token : *tokens)
          if (token >= vocab)
            throw std::runtime_error(
                "multiple-choice example " + std::to_string(i) +
                " has token " + std::to_string(token) +
                ", expected ids below " + std::to_string(vocab) +
                " (the model's vocabulary)");
    }
    // Every rank checks every example (so all throw alike), scores its own.
    if (i % world == rank)
      for (size_t c = 0; c < e.completions.size(); ++c)
        rows.push_back({i, static_cast<int64_t>(c)});
  }

  ChoiceScore score;
  score.examples = count;
  score.meanLoss.resize(count);
  std::vector<std::vector<double>> sumLoss(count);
  for (int64_t i = 0; i < count; ++i) {
    score.meanLoss[i].resize(all[i].completions.size());
    sumLoss[i].resize(all[i].completions.size());
  }
  std::vector<int32_t> window(B * T);
  for (size_t first = 0; first < rows.size(); first += B) {
    std::fill(window.begin(), window.end(), 0);
    for (int64_t b = 0; b < B && first + b < rows.size(); ++b) {
      const ChoiceExample &e = all[rows[first + b].example];
      const auto &completion = e.completions[rows[first + b].completion];
      int32_t *row = window.data() + b * T;
      std::copy(e.context.begin(), e.context.end(), row);
      std::copy(completion.begin(), completion.end(), row + e.context.size());
    }
    writeInput(ctx, manifest, EntryKind::Logits, "tokens", window.data(), {B, T});
    artifact.run(EntryKind::Logits, ctx);
    const float *logits = static_cast<const float *>(ctx.data(out->buffer()));
    for (int64_t b = 0; b < B && first + b < rows.size(); ++b) {
      const Row &r = rows[first + b];
      const ChoiceExample &e = all[r.example];
      const auto &completion = e.completions[r.completion];
      // Position p's logits predict token p + 1 of the row; only the
      // completion's positions leave the arena (device memory on CUDA).
      std::vector<float> span(completion.size() * padded);
      ctx.copyOut(span.data(),
                  logits + (b * T + e.context.size() - 1) * padded,
                  span.size() * sizeof(float));
      double sum = 0;
      for (size_t k = 0; k < completion.size(); ++k) {
        const float *z = span.data() + k * padded;
        double top = *std::max_element(z, z + vocab), total = 0;
        for (int64_t v = 0; v < vocab; ++v)
          total += std::exp(static_cast<double>(z[v]) - top);
        sum += top + std::log(total) - z[completion[k]];
      }
      sumLoss[r.example][r.completion] = sum;
      score.meanLoss[r.example][r.completion] = sum / completion.size();
    }
  }
  for (int64_t i = rank; i < count; i += world) {
    auto argmin = [](const std::vector<double> &v) {
      return std::min_element(v.begin(), v.end()) - v.begin();
    };
    score.correct += argmin(sumLoss[i]) == all[i].label;
    score.correctNorm += argmin(score.meanLoss[i]) == all[i].label;
  }
  if (world > 1) {
    score.correct = static_cast<int64_t>(
        sumOverRanks(*comm, static_cast<double>(score.correct)));
    score.correctNorm = static_cast<int64_t>(
        sumOverRanks(*comm, static_cast<double>(score.correctNorm)));
  }
  return score;
}

} // namespace gptrt::train
