// llm.c token shards: writer/reader round trip, every header/size error,
// globbing, and the batch loader (targets shifted by one, llm.c's window
// order, shard changes and wrap-around, per-rank slices, position restore).
#include "runtime/data/Shards.h"
#include "test/unit/runtime/TempDir.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>
#include <set>

namespace gptrt::test {
namespace {

using data::Batch;
using data::DataLoader;
using data::Position;

// Tokens whose value tells where they came from: shard s, index i ->
// s * 1000 + i (shards up to 1000 tokens).
std::vector<uint16_t> tokensOf(int shard, int count) {
  std::vector<uint16_t> t(static_cast<size_t>(count));
  for (int i = 0; i < count; ++i)
    t[static_cast<size_t>(i)] = static_cast<uint16_t>(shard * 1000 + i);
  return t;
}

std::string header(int32_t magic, int32_t version, int32_t count) {
  std::string h(1024, '\0');
  std::memcpy(&h[0], &magic, 4);
  std::memcpy(&h[4], &version, 4);
  std::memcpy(&h[8], &count, 4);
  return h;
}

TEST(ShardTest, WriteReadRoundTripAndExactFormat) {
  TempDir dir;
  const std::vector<uint16_t> tokens = {50256, 0, 1, 65535, 1234};
  data::writeShard(dir.file("a.bin"), tokens);
  EXPECT_EQ(data::readShard(dir.file("a.bin")), tokens);
  const data::ShardInfo info = data::readShardHeader(dir.file("a.bin"));
  EXPECT_EQ(info.tokens, 5);
  EXPECT_EQ(info.path, dir.file("a.bin"));

  std::string want = header(20240520, 1, 5);
  want.append(reinterpret_cast<const char *>(tokens.data()), 10);
  EXPECT_EQ(readBytes(dir.file("a.bin")), want);

  data::writeShardFromIds(dir.file("b.bin"), {7, 8, 9});
  EXPECT_EQ(data::readShard(dir.file("b.bin")),
            (std::vector<uint16_t>{7, 8, 9}));
  data::writeShard(dir.file("empty.bin"), {});
  EXPECT_TRUE(data::readShard(dir.file("empty.bin")).empty());
}

TEST(ShardTest, WriterRejectsIdsOutsideUint16) {
  TempDir dir;
  EXPECT_ERROR(data::writeShardFromIds(dir.file("a.bin"), {1, 65536}),
               "token 65536 at position 1 is outside [0, 65535], expected a "
               "uint16 id");
  EXPECT_ERROR(data::writeShardFromIds(dir.file("a.bin"), {-1}),
               "token -1 at position 0 is outside [0, 65535]");
}

TEST(ShardTest, HeaderErrors) {
  TempDir dir;
  const std::string f = dir.file("bad.bin");
  EXPECT_ERROR(data::readShardHeader(dir.file("missing.bin")),
               "shard " + dir.file("missing.bin") +
                   " cannot be opened (No such file or directory): check the "
                   "--data path");

  writeBytes(f, std::string(100, '\0'));
  EXPECT_ERROR(data::readShardHeader(f),
               "shard " + f + " has 100 bytes, expected at least 1024 (the "
                              "256 x int32 header of an llm.c token shard)");

  writeBytes(f, header(20240501, 1, 0));
  EXPECT_ERROR(data::readShardHeader(f),
               "shard " + f + " has magic 20240501, expected 20240520 "
                              "(llm.c token shard)");

  writeBytes(f, header(20240520, 2, 0));
  EXPECT_ERROR(data::readShardHeader(f),
               "shard " + f + " has version 2, expected 1 (uint16 GPT-2 "
                              "tokens)");

  writeBytes(f, header(20240520, 1, -5));
  EXPECT_ERROR(data::readShardHeader(f),
               "shard " + f + " has token count -5, expected >= 0");

  writeBytes(f, header(20240520, 1, 10) + std::string(12, '\1'));
  EXPECT_ERROR(data::readShardHeader(f),
               "shard " + f + " has 1036 bytes, expected 1044 (header + 10 "
                              "uint16 tokens, as its header says): the file "
                              "is truncated");
  EXPECT_ERROR(data::readShard(f), "the file is truncated");

  writeBytes(f, header(20240520, 1, 2) + std::string(5, '\1'));
  EXPECT_ERROR(data::readShardHeader(f),
               "shard " + f + " has 1029 bytes, expected 1028 (header + 2 "
                              "uint16 tokens, as its header says): it has "
                              "trailing bytes");
}

TEST(ShardTest, GlobSortsAndReportsNoMatch) {
  TempDir dir;
  for (const char *name : {"train_002.bin", "train_000.bin", "train_001.bin",
                           "val_000.bin", "notes.txt"})
    writeBytes(dir.file(name), "x");
  EXPECT_EQ(data::globShards(dir.path() + "/train_*.bin"),
            (std::vector<std::string>{dir.file("train_000.bin"),
                                      dir.file("train_001.bin"),
                                      dir.file("train_002.bin")}));
  EXPECT_EQ(data::globShards(dir.path()).size(), 4u) << "a directory: *.bin";
  EXPECT_EQ(data::globShards(dir.path()).front(), dir.file("train_000.bin"));
  EXPECT_ERROR(data::globShards(dir.path() + "/test_*.bin"),
               "no shard files match '" + dir.path() +
                   "/test_*.bin', expected at least one llm.c token shard: "
                   "check --data");
  TempDir empty;
  EXPECT_ERROR(data::globShards(empty.path()),
               "directory " + empty.path() + " has no *.bin files");
}

class LoaderTest : public ::testing::Test {
protected:
  // Three shards of 100, 60 and 41 tokens.
  LoaderTest() {
    const int sizes[] = {100, 60, 41};
    for (int s = 0; s < 3; ++s) {
      files.push_back(dir.file("shard_" + std::to_string(s) + ".bin"));
      data::writeShard(files.back(), tokensOf(s, sizes[s]));
    }
  }
  TempDir dir;
  std::vector<std::string> files;
};

TEST_F(LoaderTest, BatchesFollowLlmcOrderAndShiftTargets) {
  // B*T = 8, world 1: windows at 0, 8, ... while offset + 9 <= tokens.
  DataLoader loader(files, 2, 4);
  EXPECT_EQ(loader.windowTokens(), 8);
  EXPECT_EQ(loader.windowsPerEpoch(), 12 + 7 + 5);
  std::vector<std::pair<int, int>> starts; // (shard, first token index)
  for (int i = 0; i < 24; ++i) {
    const Batch b = loader.next();
    ASSERT_EQ(b.tokens.size(), 8u);
    ASSERT_EQ(b.batch, 2);
    ASSERT_EQ(b.seq, 4);
    for (size_t j = 0; j < 8; ++j) {
      ASSERT_EQ(b.tokens[j] + 1, b.targets[j]) << "targets = tokens + 1 here";
      ASSERT_EQ(b.tokens[j], b.tokens[0] + int32_t(j));
    }
    starts.push_back({b.tokens[0] / 1000, b.tokens[0] % 1000});
  }
  EXPECT_EQ(starts[0], std::make_pair(0, 0));
  EXPECT_EQ(starts[11], std::make_pair(0, 88)) << "88 + 9 <= 100";
  EXPECT_EQ(starts[12], std::make_pair(1, 0)) << "96 + 9 > 100: next shard";
  EXPECT_EQ(starts[18], std::make_pair(1, 48));
  EXPECT_EQ(starts[19], std::make_pair(2, 0));
  EXPECT_EQ(starts[23], std::make_pair(2, 32)) << "32 + 9 <= 41";
  EXPECT_EQ(loader.position(), (Position{2, 40, 0}));
  const Batch again = loader.next();
  EXPECT_EQ(again.tokens[0], 0) << "wraps to shard 0";
  EXPECT_EQ(loader.position(), (Position{0, 8, 1})) << "epoch counted";
}

TEST_F(LoaderTest, SameInputsSameBatches) {
  DataLoader a(files, 1, 5), b(dir.path() + "/shard_*.bin", 1, 5);
  for (int i = 0; i < 50; ++i) {
    const Batch x = a.next(), y = b.next();
    ASSERT_EQ(x.tokens, y.tokens);
    ASSERT_EQ(x.targets, y.targets);
  }
}

TEST_F(LoaderTest, RanksGetDisjointSlicesOfEachWindow) {
  const int world = 3;
  std::vector<DataLoader> ranks;
  for (int r = 0; r < world; ++r)
    ranks.emplace_back(files, 2, 2, r, world);
  DataLoader single(files, 2, 2 * world); // one rank reading whole windows
  std::set<int32_t> seen;
  // One pass over the data: after that the order repeats.
  for (int64_t step = 0; step < single.windowsPerEpoch(); ++step) {
    const Batch whole = single.next();
    for (int r = 0; r < world; ++r) {
      const Batch b = ranks[static_cast<size_t>(r)].next();
      for (size_t j = 0; j < b.tokens.size(); ++j) {
        ASSERT_TRUE(seen.insert(b.tokens[j]).second)
            << "token " << b.tokens[j] << " read twice";
        // Rank r's slice is part r of the global window.
        ASSERT_EQ(b.tokens[j], whole.tokens[static_cast<size_t>(r) * 4 + j]);
      }
    }
    for (int r = 0; r < world; ++r)
      ASSERT_EQ(ranks[static_cast<size_t>(r)].position(), single.position());
  }
}

TEST_F(LoaderTest, RestoredPositionContinuesIdentically) {
  DataLoader a(files, 2, 3, 1, 2);
  for (int i = 0; i < 13; ++i)
    a.next();
  const Position saved = a.position();
  std::vector<Batch> expected;
  for (int i = 0; i < 9; ++i)
    expected.push_back(a.next());
  DataLoader b(files, 2, 3, 1, 2);
  b.restore(saved);
  for (int i = 0; i < 9; ++i) {
    const Batch got = b.next();
    ASSERT_EQ(got.tokens, expected[static_cast<size_t>(i)].tokens) << i;
    ASSERT_EQ(got.targets, expected[static_cast<size_t>(i)].targets) << i;
  }
  EXPECT_EQ(a.position(), b.position());
  b.reset();
  EXPECT_EQ(b.position(), Position{});
}

TEST_F(LoaderTest, RestoreErrors) {
  DataLoader loader(files, 2, 4);
  EXPECT_ERROR(loader.restore({3, 0, 0}),
               "data position shard 3 is out of range, expected 0..2: resume "
               "with the same --data shards");
  EXPECT_ERROR(loader.restore({1, 61, 0}),
               "data position offset 61 in shard " + files[1] +
                   " is out of range, expected 0..60");
  EXPECT_ERROR(loader.restore({0, 0, -1}),
               "data position epoch -1 is negative");
  // Past the last full window is a reachable position: it moves on.
  loader.restore({0, 96, 4});
  EXPECT_EQ(loader.next().tokens[0], 1000);
}

// A token outside the model's vocabulary is found before training: here
// the last token of the last shard, which only the 24th batch reads.
TEST_F(LoaderTest, VocabularyIsCheckedBeforeTheFirstBatch) {
  DataLoader fits(files, 2, 4);
  EXPECT_NO_THROW(fits.checkVocabulary(2041)) << "the largest id is 2040";
  EXPECT_EQ(fits.next().tokens[0], 0) << "and batches follow as before";
  DataLoader tight(files, 2, 4);
  EXPECT_ERROR(tight.checkVocabulary(2040),
               "shard " + files[2] +
                   " has token 2040 at position 40, expected ids below 2040 "
                   "(the model's vocabulary): use data tokenized for this "
                   "model");
}

TEST_F(LoaderTest, ConfigurationErrors) {
  EXPECT_ERROR(DataLoader(files, 4, 5, 0, 3),
               "shard " + files[1] +
                   " has 60 tokens, too small for one batch: expected at "
                   "least B*T*world+1 = 4*5*3+1 = 61: use a smaller batch or "
                   "sequence length, or larger shards");
  EXPECT_NO_THROW(DataLoader(files, 4, 5, 0, 2)) << "41 tokens are enough";
  EXPECT_ERROR(DataLoader(files, 0, 5), "batch shape 0 x 5 is empty");
  EXPECT_ERROR(DataLoader(files, 2, 2, 2, 2),
               "rank 2 of world 2, expected 0 <= rank < world size");
  EXPECT_ERROR(DataLoader(std::vector<std::string>{}, 2, 2),
               "no shard files given");
  writeBytes(dir.file("shard_9.bin"), header(1, 1, 0));
  EXPECT_ERROR(DataLoader(dir.path(), 1, 1),
               "shard " + dir.file("shard_9.bin") + " has magic 1");
}

} // namespace
} // namespace gptrt::test
