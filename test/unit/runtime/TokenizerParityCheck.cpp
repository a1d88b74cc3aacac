// Compares runtime/data/Tokenizer with the reference JavaScript encoder of
// gpt-3-encoder (tokenizer-reference.js wrote what it said): token ids for
// every text, token for token, plus decode(encode(text)) == text, and the
// pattern's character classes for every Unicode code point. Driven by
// tokenizer-parity.sh; exits 1 with the first difference of each text.
//
//   tokenizer-parity-check VOCAB_DIR REFERENCE_IDS [REFERENCE_CLASSES]
#include "runtime/data/Tokenizer.h"

#include <unicode/uchar.h>

#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

using gptrt::data::CharClass;
using gptrt::data::Tokenizer;

namespace {

std::string readFile(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    throw std::runtime_error("cannot read " + path);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// Shows bytes with escapes, so whitespace differences are visible.
std::string show(const std::string &bytes) {
  std::string out = "\"";
  for (unsigned char c : bytes) {
    if (c == '\n')
      out += "\\n";
    else if (c == '\t')
      out += "\\t";
    else if (c == '\r')
      out += "\\r";
    else if (c == '"' || c == '\\')
      out += std::string("\\") + static_cast<char>(c);
    else if (c < 0x20 || c == 0x7F) {
      char buf[8];
      std::snprintf(buf, sizeof(buf), "\\x%02X", c);
      out += buf;
    } else
      out += static_cast<char>(c);
  }
  return out + "\"";
}

std::string showTokens(const Tokenizer &tok, const std::vector<int32_t> &ids,
                       size_t from, size_t to) {
  std::string out;
  for (size_t i = from; i < to && i < ids.size(); ++i) {
    std::string bytes;
    if (ids[i] >= 0 && ids[i] < tok.vocabSize())
      tok.appendBytes(ids[i], bytes);
    out += " " + std::to_string(ids[i]) + "=" + show(bytes);
  }
  return out;
}

// Classes that this build and Node's regex engine may see differently on
// purpose: GPT-2's \s is White_Space (U+0085 yes, U+FEFF no); JavaScript's
// is not. And code points unassigned in our Unicode tables (ICU's version)
// but assigned in Node's newer one.
bool knownClassDifference(char32_t cp) {
  return cp == 0x85 || cp == 0xFEFF ||
         u_charType(static_cast<UChar32>(cp)) == U_UNASSIGNED;
}

int checkClasses(const std::string &path) {
  const std::string ref = readFile(path);
  if (ref.size() != 0x110000) {
    std::cerr << "tokenizer-parity: " << path << " has " << ref.size()
              << " classes, expected 1114112 (one per code point)\n";
    return 1;
  }
  const char names[] = {'O', 'L', 'N', 'S'};
  int bad = 0, known = 0;
  for (char32_t cp = 0; cp < 0x110000; ++cp) {
    if (cp >= 0xD800 && cp <= 0xDFFF)
      continue;
    const char ours = names[static_cast<int>(gptrt::data::charClass(cp))];
    if (ours == ref[cp])
      continue;
    if (knownClassDifference(cp)) {
      ++known;
      continue;
    }
    if (++bad <= 20)
      std::fprintf(stderr,
                   "tokenizer-parity: U+%04X is class %c here, %c in "
                   "JavaScript\n",
                   static_cast<unsigned>(cp), ours, ref[cp]);
  }
  std::printf("tokenizer-parity: character classes of all code points: %d "
              "differ (%d more are the expected ones: U+0085, U+FEFF, and "
              "code points newer than Unicode %s)\n",
              bad, known, gptrt::data::charClassUnicodeVersion());
  return bad == 0 ? 0 : 1;
}

} // namespace

int main(int argc, char **argv) {
  if (argc != 3 && argc != 4) {
    std::cerr << "usage: tokenizer-parity-check VOCAB_DIR REFERENCE_IDS "
                 "[REFERENCE_CLASSES]\n";
    return 2;
  }
  try {
    Tokenizer tok = Tokenizer::load(argv[1]);
    std::ifstream ref(argv[2]);
    if (!ref)
      throw std::runtime_error(std::string("cannot read ") + argv[2]);
    std::string line;
    size_t texts = 0, bytes = 0, tokens = 0, failed = 0;
    while (std::getline(ref, line)) {
      const size_t tab = line.find('\t');
      if (tab == std::string::npos)
        throw std::runtime_error("reference line without a tab: " + line);
      const std::string path = line.substr(0, tab);
      std::vector<int32_t> want;
      std::istringstream ids(line.substr(tab + 1));
      for (int32_t id; ids >> id;)
        want.push_back(id);
      const std::string text = readFile(path);
      const std::vector<int32_t> got = tok.encode(text);
      ++texts;
      bytes += text.size();
      tokens += want.size();
      if (got != want) {
        size_t i = 0;
        while (i < got.size() && i < want.size() && got[i] == want[i])
          ++i;
        const size_t from = i >= 3 ? i - 3 : 0;
        std::cerr << "tokenizer-parity: " << path << ": token " << i
                  << " differs (" << got.size() << " tokens here, "
                  << want.size() << " in JavaScript)\n  here:      "
                  << showTokens(tok, got, from, i + 5) << "\n  JavaScript:"
                  << showTokens(tok, want, from, i + 5) << "\n";
        ++failed;
      }
      if (tok.decode(got) != text) {
        std::cerr << "tokenizer-parity: " << path
                  << ": decode(encode(text)) differs from the text\n";
        ++failed;
      }
    }
    if (texts == 0)
      throw std::runtime_error(std::string(argv[2]) + " names no texts");
    std::printf("tokenizer-parity: %zu texts, %zu bytes, %zu tokens: %zu "
                "differ from gpt-3-encoder's JavaScript encoder\n",
                texts, bytes, tokens, failed);
    int rc = failed == 0 ? 0 : 1;
    if (argc == 4)
      rc |= checkClasses(argv[3]);
    return rc;
  } catch (const std::exception &e) {
    std::cerr << "tokenizer-parity: error: " << e.what() << "\n";
    return 1;
  }
}
