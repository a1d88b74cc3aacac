// The corpus writer behind gpt-data (val shard, train shards, manifest) and
// its SHA-256: FIPS 180-4 test vectors, shard cutting, the manifest read
// back, and the refusal to write over an existing corpus.
#include "runtime/data/Corpus.h"
#include "runtime/data/Sha256.h"
#include "runtime/data/Shards.h"
#include "test/unit/runtime/TempDir.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>

namespace gptrt::test {
namespace {

using data::CorpusWriter;

TEST(Sha256Test, StandardVectors) {
  EXPECT_EQ(data::sha256Hex(""),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(data::sha256Hex("abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(data::sha256Hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomn"
                            "opnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  // One million 'a', fed in uneven pieces to cross block boundaries.
  data::Sha256 s;
  const std::string piece(997, 'a');
  size_t fed = 0;
  while (fed + piece.size() <= 1000000) {
    s.update(piece);
    fed += piece.size();
  }
  s.update(std::string(1000000 - fed, 'a'));
  EXPECT_EQ(s.hexDigest(),
            "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

TEST(CorpusWriterTest, ValFirstThenFullTrainShardsThenManifest) {
  TempDir dir;
  CorpusWriter w(dir.file("c"), /*shardTokens=*/4, /*valTokens=*/3,
                 /*endOfText=*/50256);
  w.beginDocument();
  w.add({1, 2, 3, 4, 5});
  w.beginDocument();
  w.add({6, 7});
  const auto &shards = w.finish();
  ASSERT_EQ(shards.size(), 3u);
  EXPECT_EQ(shards[0].name, "val_000000.bin");
  EXPECT_EQ(shards[1].name, "train_000000.bin");
  EXPECT_EQ(shards[2].name, "train_000001.bin");
  EXPECT_EQ(data::readShard(dir.file("c/val_000000.bin")),
            (std::vector<uint16_t>{50256, 1, 2}));
  EXPECT_EQ(data::readShard(dir.file("c/train_000000.bin")),
            (std::vector<uint16_t>{3, 4, 5, 50256}));
  EXPECT_EQ(data::readShard(dir.file("c/train_000001.bin")),
            (std::vector<uint16_t>{6, 7}));
  EXPECT_EQ(w.tokens(), 9);
  EXPECT_EQ(w.documents(), 2);

  const auto manifest = data::readManifest(dir.file("c"));
  ASSERT_EQ(manifest.size(), 3u);
  for (size_t i = 0; i < manifest.size(); ++i) {
    EXPECT_EQ(manifest[i].name, shards[i].name);
    EXPECT_EQ(manifest[i].tokens, shards[i].tokens);
    EXPECT_EQ(manifest[i].sha256,
              data::sha256Hex(readBytes(dir.file("c/" + shards[i].name))));
  }
}

TEST(CorpusWriterTest, RefusesAnExistingCorpusUnlessReplacing) {
  TempDir dir;
  {
    CorpusWriter w(dir.path(), 2, 0, 50256);
    w.beginDocument();
    w.add({1, 2, 3, 4, 5});
    w.finish();
  }
  ASSERT_TRUE(std::filesystem::exists(dir.file("train_000002.bin")));
  EXPECT_ERROR(CorpusWriter(dir.path(), 2, 0, 50256),
               "already holds a corpus");
  writeBytes(dir.file("notes.txt"), "kept");
  CorpusWriter w(dir.path(), 10, 0, 50256, /*replace=*/true);
  w.beginDocument();
  w.finish();
  EXPECT_FALSE(std::filesystem::exists(dir.file("train_000002.bin")));
  EXPECT_TRUE(std::filesystem::exists(dir.file("notes.txt")));
  EXPECT_EQ(data::readShard(dir.file("train_000000.bin")),
            (std::vector<uint16_t>{50256}));
}

TEST(CorpusWriterTest, BadSizesAndInputs) {
  TempDir dir;
  EXPECT_ERROR(CorpusWriter(dir.path(), 0, 0, 50256),
               "--shard-tokens 0 is out of range, expected 1..2147483647");
  EXPECT_ERROR(CorpusWriter(dir.path(), 10, -1, 50256),
               "--val-tokens -1 is out of range");
  {
    CorpusWriter w(dir.file("a"), 10, 5, 50256);
    w.beginDocument();
    w.add({1, 2});
    EXPECT_ERROR(w.finish(), "the input has 3 tokens, all of them for the "
                             "val shard (--val-tokens 5)");
  }
  {
    CorpusWriter w(dir.file("b"), 10, 0, 50256);
    EXPECT_ERROR(w.finish(), "the input has no tokens");
    EXPECT_ERROR(w.add({70000}), "token 70000 is outside [0, 65535]");
  }
  writeBytes(dir.file("manifest.txt"), "# header\nval_000000.bin 12\n");
  EXPECT_ERROR(data::readManifest(dir.path()),
               "manifest.txt: line 2 (\"val_000000.bin 12\") is not 'SHARD "
               "TOKENS SHA256'");
  EXPECT_ERROR(data::readManifest(dir.file("nowhere")),
               "it is written by gpt-data encode");
}

} // namespace
} // namespace gptrt::test
