// Throughput benchmark of the GPT-2 tokenizer (not a test): encodes text
// files on one thread and prints MB/s, first with an empty word cache (every
// word merged once, as a fresh run of gpt-data does), then warm.
//
//   tokenizer-bench [--vocab DIR] [--passes N] FILE_OR_DIR...
//   (text of the Brown corpus: tools/prepare-brown.sh --text-only DIR)
#include "runtime/data/Tokenizer.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

namespace fs = std::filesystem;
using gptrt::data::Tokenizer;

int main(int argc, char **argv) {
  std::string vocab = gptrt::data::defaultVocabDir();
  int passes = 5;
  std::vector<std::string> paths;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--vocab" && i + 1 < argc)
      vocab = argv[++i];
    else if (a == "--passes" && i + 1 < argc)
      passes = std::max(1, std::atoi(argv[++i]));
    else
      paths.push_back(a);
  }
  if (paths.empty()) {
    std::cerr << "usage: tokenizer-bench [--vocab DIR] [--passes N] "
                 "FILE_OR_DIR... (Brown text: tools/prepare-brown.sh "
                 "--text-only DIR)\n";
    return 2;
  }
  std::vector<std::string> texts;
  size_t bytes = 0;
  for (const std::string &p : paths) {
    std::vector<fs::path> files;
    if (fs::is_directory(p)) {
      for (const auto &e : fs::directory_iterator(p))
        if (e.is_regular_file())
          files.push_back(e.path());
      std::sort(files.begin(), files.end());
    } else {
      files.push_back(p);
    }
    for (const fs::path &f : files) {
      std::ifstream in(f, std::ios::binary);
      if (!in) {
        std::cerr << "tokenizer-bench: cannot read " << f << "\n";
        return 1;
      }
      std::ostringstream s;
      s << in.rdbuf();
      texts.push_back(s.str());
      bytes += texts.back().size();
    }
  }
  try {
    const Tokenizer loaded = Tokenizer::load(vocab);
    Tokenizer tok = loaded; // a copy starts with an empty cache
    std::vector<int32_t> ids;
    ids.reserve(bytes / 2);
    double cold = 0, best = 0;
    size_t tokens = 0;
    for (int pass = 0; pass < passes; ++pass) {
      ids.clear();
      const auto t0 = std::chrono::steady_clock::now();
      for (const std::string &t : texts)
        tok.encode(t, ids);
      const double s = std::chrono::duration<double>(
                           std::chrono::steady_clock::now() - t0)
                           .count();
      const double mbs = static_cast<double>(bytes) / 1e6 / s;
      if (pass == 0)
        cold = mbs;
      else
        best = std::max(best, mbs);
      tokens = ids.size();
    }
    std::printf("tokenizer-bench: %zu files, %.2f MB, %zu tokens (%.2f "
                "bytes/token), one thread\n",
                texts.size(), static_cast<double>(bytes) / 1e6, tokens,
                static_cast<double>(bytes) / static_cast<double>(tokens));
    std::printf("tokenizer-bench: cold cache %.1f MB/s", cold);
    if (passes > 1)
      std::printf(", warm cache %.1f MB/s (best of %d)", best, passes - 1);
    std::printf("\n");
  } catch (const std::exception &e) {
    std::cerr << "tokenizer-bench: error: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
