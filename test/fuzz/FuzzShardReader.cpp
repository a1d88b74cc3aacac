// libFuzzer target: gptrun's token-shard reader (runtime/data/Shards.h) on
// arbitrary file contents. The input is written to a file and read the way
// gptrun reads --data: the header check, the whole shard, a DataLoader of
// small windows over it with the vocabulary check, and a few batches. Bad
// input must end in std::runtime_error (one line for the user), never in
// a crash, a sanitizer report or an allocation sized by a corrupt header.
#include "runtime/data/Shards.h"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <unistd.h>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static const std::string path = [] {
    std::string p = "/tmp/gptc-fuzz-shard-" + std::to_string(getpid()) + ".bin";
    std::atexit([] {
      std::remove(("/tmp/gptc-fuzz-shard-" + std::to_string(getpid()) + ".bin")
                      .c_str());
    });
    return p;
  }();
  FILE *f = std::fopen(path.c_str(), "wb");
  if (f == nullptr)
    return 0;
  std::fwrite(data, 1, size, f);
  std::fclose(f);
  try {
    gptrt::data::ShardInfo info = gptrt::data::readShardHeader(path);
    (void)info;
    std::vector<uint16_t> tokens = gptrt::data::readShard(path);
    (void)tokens;
    gptrt::data::DataLoader loader(std::vector<std::string>{path}, /*batch=*/2,
                                   /*seq=*/4);
    loader.checkVocabulary(50257);
    gptrt::data::Batch batch;
    for (int i = 0; i < 3; ++i)
      loader.next(batch);
  } catch (const std::runtime_error &) {
    // The reader's refusal: what bad input must end in.
  } catch (const std::invalid_argument &) {
  }
  return 0;
}
