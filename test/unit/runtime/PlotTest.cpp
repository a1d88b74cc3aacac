// gptrun plot: a PNG from run logs (needs gnuplot, which tools/setup.sh
// installs), and one clear error for a missing or malformed log.
#include "runtime/train/Plot.h"
#include "test/unit/runtime/TempDir.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <stdexcept>

namespace gptrt::test {
namespace {

std::string writeLog(const std::string &path, double start, bool val,
                     bool fp8Stats = false) {
  std::ofstream out(path);
  for (int step = 0; step < 30; ++step) {
    out << "{\"step\": " << step << ", \"loss\": " << start - 0.1 * step
        << ", \"lr\": 0.001, \"grad_norm\": 1.5, \"tokens_per_s\": 1000"
        << ", \"step_ms\": 200";
    if (val && step % 10 == 9)
      out << ", \"val_loss\": " << start - 0.1 * step + 0.2;
    if (fp8Stats && step % 5 == 0)
      out << ", \"fp8\": {\"h.0.mlp.fc/forward/a\": {\"amax\": " << 3 + step
          << ", \"scale\": 100, \"underflow\": 0.001, \"saturated\": 0}, "
          << "\"lm_head/grad_input/a\": {\"amax\": 0.5, \"scale\": 1e5, "
          << "\"underflow\": " << 0.0001 * step << ", \"saturated\": 0}}";
    out << "}\n";
  }
  return path;
}

std::string errorOf(const std::vector<std::string> &runs, const std::string &png) {
  try {
    train::plotRuns(runs, png);
  } catch (const std::runtime_error &e) {
    return e.what();
  }
  return "";
}

TEST(Plot, TwoRunsSideBySideMakeAPng) {
  TempDir dir;
  std::string a = writeLog(dir.file("bf16.jsonl"), 10.8, true);
  std::string b = writeLog(dir.file("fp8.jsonl"), 10.9, false);
  std::string png = dir.file("curves.png");
  train::plotRuns({a, b}, png);
  std::ifstream in(png, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)),
                    std::istreambuf_iterator<char>());
  ASSERT_GT(bytes.size(), 10000u) << "a 1400x900 chart is more than 10 kB";
  EXPECT_EQ(bytes.substr(0, 8), std::string("\x89PNG\r\n\x1a\n", 8));
  EXPECT_FALSE(std::filesystem::exists(png + ".tmp.png"));
}

/// Width and height from the PNG's IHDR chunk (big-endian, bytes 16..23).
std::pair<uint32_t, uint32_t> pngSize(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  unsigned char header[24] = {};
  in.read(reinterpret_cast<char *>(header), sizeof(header));
  auto word = [&](int at) {
    return uint32_t(header[at]) << 24 | uint32_t(header[at + 1]) << 16 |
           uint32_t(header[at + 2]) << 8 | header[at + 3];
  };
  return {word(16), word(20)};
}

TEST(Plot, Fp8StatisticsAddARowOfPanels) {
  TempDir dir;
  std::string plain = writeLog(dir.file("bf16.jsonl"), 10.8, true);
  std::string stats = writeLog(dir.file("fp8.jsonl"), 10.9, false, true);
  train::plotRuns({plain}, dir.file("plain.png"));
  train::plotRuns({plain, stats}, dir.file("stats.png"));
  EXPECT_EQ(pngSize(dir.file("plain.png")), std::make_pair(1400u, 900u));
  EXPECT_EQ(pngSize(dir.file("stats.png")), std::make_pair(1400u, 1350u))
      << "amax and underflow per layer below the four training panels";
}

TEST(Plot, MissingAndMalformedLogsAreOneLine) {
  TempDir dir;
  std::string png = dir.file("curves.png");
  EXPECT_THAT(errorOf({dir.file("none.jsonl")}, png),
              ::testing::HasSubstr("cannot read run log"));
  std::ofstream(dir.file("bad.jsonl")) << "{\"loss\": 3}\n";
  EXPECT_THAT(errorOf({dir.file("bad.jsonl")}, png),
              ::testing::HasSubstr("line 1 has no \"step\" and \"loss\""));
  EXPECT_FALSE(std::filesystem::exists(png));
}

} // namespace
} // namespace gptrt::test
