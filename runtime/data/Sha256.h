// SHA-256 (FIPS 180-4), for the checksums gpt-data writes into a corpus
// manifest: the same digest `sha256sum` prints, so shards can be checked
// with standard tools.
#ifndef GPTRT_DATA_SHA256_H
#define GPTRT_DATA_SHA256_H

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace gptrt::data {

class Sha256 {
public:
  Sha256();
  void update(const void *data, size_t bytes);
  void update(std::string_view s) { update(s.data(), s.size()); }
  // The digest as 64 lowercase hex digits; the object is then spent.
  std::string hexDigest();

private:
  void block(const uint8_t *p);
  uint32_t h_[8];
  uint8_t buf_[64];
  size_t bufLen_ = 0;
  uint64_t totalBytes_ = 0;
};

std::string sha256Hex(std::string_view data);
// Of a file's bytes; throws std::runtime_error when it cannot be read.
std::string sha256File(const std::string &path);

} // namespace gptrt::data

#endif // GPTRT_DATA_SHA256_H
