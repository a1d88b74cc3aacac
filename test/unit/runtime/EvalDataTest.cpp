// The evaluation inputs of gptrun: llm.c multiple-choice eval files
// (MultipleChoice.h) and the fixed-token validation rows (Validation.h).
#include "runtime/data/Shards.h"
#include "runtime/train/MultipleChoice.h"
#include "runtime/train/Validation.h"
#include "TempDir.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>

namespace gptrt::test {
namespace {

using train::readChoiceFile;

/// The uint16 stream of one example, as llm.c's write_evalfile lays it out.
std::vector<uint16_t> example(uint16_t index, uint16_t label,
                              const std::vector<uint16_t> &context,
                              const std::vector<std::vector<uint16_t>> &endings) {
  std::vector<uint16_t> s = {65535, 0, index, label,
                             static_cast<uint16_t>(endings.size()),
                             static_cast<uint16_t>(context.size())};
  s.insert(s.end(), context.begin(), context.end());
  for (const auto &e : endings) {
    s.push_back(static_cast<uint16_t>(e.size()));
    s.insert(s.end(), e.begin(), e.end());
  }
  s[1] = static_cast<uint16_t>(2 * s.size());
  return s;
}

std::string file(const std::vector<std::vector<uint16_t>> &examples,
                 int32_t magic = 20240522, int32_t version = 1,
                 int32_t count = -1, int32_t longest = -1) {
  int32_t header[256] = {};
  header[0] = magic;
  header[1] = version;
  header[2] = count >= 0 ? count : static_cast<int32_t>(examples.size());
  for (const auto &e : examples)
    header[3] = std::max<int32_t>(header[3], 2 * e.size());
  if (longest >= 0)
    header[3] = longest;
  std::string bytes(reinterpret_cast<const char *>(header), sizeof(header));
  for (const auto &e : examples)
    bytes.append(reinterpret_cast<const char *>(e.data()), 2 * e.size());
  return bytes;
}

TEST(ChoiceFileTest, ReadsEveryField) {
  TempDir dir;
  writeBytes(dir.file("a.bin"),
             file({example(7, 2, {10, 11, 12}, {{1}, {2, 3}, {4, 5, 6}, {7}}),
                   example(8, 0, {13}, {{20, 21}, {22}})}));
  auto examples = readChoiceFile(dir.file("a.bin"));
  ASSERT_EQ(examples.size(), 2u);
  EXPECT_EQ(examples[0].index, 7);
  EXPECT_EQ(examples[0].label, 2);
  EXPECT_EQ(examples[0].context, (std::vector<int32_t>{10, 11, 12}));
  ASSERT_EQ(examples[0].completions.size(), 4u);
  EXPECT_EQ(examples[0].completions[2], (std::vector<int32_t>{4, 5, 6}));
  EXPECT_EQ(examples[1].completions[0], (std::vector<int32_t>{20, 21}));
}

TEST(ChoiceFileTest, RefusesDamagedFiles) {
  TempDir dir;
  const std::string f = dir.file("bad.bin");
  auto good = example(0, 1, {1, 2}, {{3}, {4}});
  EXPECT_ERROR(readChoiceFile(dir.file("missing.bin")),
               "eval file " + dir.file("missing.bin") +
                   " cannot be opened (No such file or directory)");

  writeBytes(f, std::string(10, '\0'));
  EXPECT_ERROR(readChoiceFile(f), "has 10 bytes, expected at least 1024");

  writeBytes(f, file({good}, 20240520));
  EXPECT_ERROR(readChoiceFile(f), "has magic 20240520, expected 20240522");

  writeBytes(f, file({good}, 20240522, 7));
  EXPECT_ERROR(readChoiceFile(f), "has version 7, expected 1");

  std::string truncated = file({good});
  truncated.resize(truncated.size() - 2);
  writeBytes(f, truncated);
  EXPECT_ERROR(readChoiceFile(f), "is truncated in example 0 (reading its "
                                  "completions)");

  writeBytes(f, file({good}, 20240522, 1, 2));
  EXPECT_ERROR(readChoiceFile(f), "is truncated in example 1 (reading its "
                                  "start marker)");

  writeBytes(f, file({good, good}, 20240522, 1, 1));
  EXPECT_ERROR(readChoiceFile(f), "has 24 bytes after its 1 examples, "
                                  "expected none");

  auto badLabel = example(0, 2, {1}, {{3}, {4}});
  writeBytes(f, file({badLabel}));
  EXPECT_ERROR(readChoiceFile(f), "example 0 has label 2, expected an index "
                                  "below its 2 completions");

  auto badSize = good;
  badSize[1] += 2;
  writeBytes(f, file({badSize}));
  EXPECT_ERROR(readChoiceFile(f), "example 0 holds 24 bytes but says 26");

  auto noMarker = good;
  noMarker[0] = 5;
  writeBytes(f, file({noMarker}));
  EXPECT_ERROR(readChoiceFile(f), "example 0 starts with 5, expected the "
                                  "marker 65535");

  writeBytes(f, file({good}, 20240522, 1, -1, 4));
  EXPECT_ERROR(readChoiceFile(f), "example 0 has 24 bytes, more than the "
                                  "header's longest example (4)");

  auto oneEnding = example(0, 0, {1}, {{3}});
  writeBytes(f, file({oneEnding}));
  EXPECT_ERROR(readChoiceFile(f), "example 0 has 1 completion(s), expected "
                                  "at least 2");
}

TEST(ValidationSetTest, RowsFollowTheLoaderAndStopAtTheTokenCount) {
  TempDir dir;
  std::vector<uint16_t> a(23), b(9);
  for (size_t i = 0; i < a.size(); ++i)
    a[i] = static_cast<uint16_t>(100 + i);
  for (size_t i = 0; i < b.size(); ++i)
    b[i] = static_cast<uint16_t>(200 + i);
  data::writeShard(dir.file("val_0.bin"), a);
  data::writeShard(dir.file("val_1.bin"), b);

  // Shard a holds rows at 0, 5, 10, 15 (the next would need token 25);
  // shard b one at 0. 22 targets: 4 full rows and 2 of the fifth.
  train::ValidationSet set(dir.path(), 5, 22);
  EXPECT_EQ(set.rows(), 5);
  EXPECT_EQ(set.inputs()[5], 105);
  EXPECT_EQ(set.targets()[5], 106);
  EXPECT_EQ(set.inputs()[20], 200);
  EXPECT_EQ(set.targets()[21], 202);
  EXPECT_EQ(set.targets()[22], -1);
  EXPECT_EQ(set.targets()[24], -1);

  EXPECT_ERROR(train::ValidationSet(dir.path(), 5, 26),
               "holds 25 target tokens in rows of 5 (2 shard(s)), "
               "--val-tokens asks for 26: lower --val-tokens");
  EXPECT_ERROR(train::ValidationSet(dir.path(), 5, 0),
               "--val-tokens 0 must be positive");
  EXPECT_ERROR(train::ValidationSet(dir.path(), 5, 10, 110),
               "shard " + dir.file("val_0.bin") + " has token 110 at position "
               "10, expected ids below 110");
}

} // namespace
} // namespace gptrt::test
