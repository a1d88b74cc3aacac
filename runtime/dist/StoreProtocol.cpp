// Encoding and decoding of the store's frames (see StoreProtocol.h).
#include "runtime/dist/StoreProtocol.h"

namespace gptrt::dist::protocol {

namespace {

void putLittleEndian(std::string &out, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i)
    out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

uint64_t getLittleEndian(const char *p, int bytes) {
  uint64_t v = 0;
  for (int i = 0; i < bytes; ++i)
    v |= static_cast<uint64_t>(static_cast<unsigned char>(p[i])) << (8 * i);
  return v;
}

} // namespace

Writer &Writer::u8(uint8_t v) {
  body_.push_back(static_cast<char>(v));
  return *this;
}

Writer &Writer::u32(uint32_t v) {
  putLittleEndian(body_, v, 4);
  return *this;
}

Writer &Writer::u64(uint64_t v) {
  putLittleEndian(body_, v, 8);
  return *this;
}

Writer &Writer::str(const std::string &v) {
  if (v.size() > kMaxFrameBytes)
    throw ProtocolError("a store key or value of " + std::to_string(v.size()) +
                        " bytes is over the limit of " +
                        std::to_string(kMaxFrameBytes) +
                        " bytes: store large data elsewhere");
  u32(static_cast<uint32_t>(v.size()));
  body_ += v;
  return *this;
}

std::string Writer::frame() const {
  if (body_.size() > kMaxFrameBytes)
    throw ProtocolError("a store request of " + std::to_string(body_.size()) +
                        " bytes is over the limit of " +
                        std::to_string(kMaxFrameBytes) + " bytes");
  std::string out;
  out.reserve(4 + body_.size());
  putLittleEndian(out, body_.size(), 4);
  out += body_;
  return out;
}

const char *Reader::take(size_t n) {
  if (body_.size() - pos_ < n)
    throw ProtocolError("store message ends early");
  const char *p = body_.data() + pos_;
  pos_ += n;
  return p;
}

uint8_t Reader::u8() { return static_cast<uint8_t>(*take(1)); }
uint32_t Reader::u32() {
  return static_cast<uint32_t>(getLittleEndian(take(4), 4));
}
uint64_t Reader::u64() { return getLittleEndian(take(8), 8); }

std::string Reader::str() {
  uint32_t n = u32();
  const char *p = take(n);
  return std::string(p, n);
}

void Reader::end() const {
  if (pos_ != body_.size())
    throw ProtocolError("store message has " +
                        std::to_string(body_.size() - pos_) +
                        " unexpected trailing bytes");
}

std::string encodeCounter(int64_t value) {
  std::string out;
  putLittleEndian(out, static_cast<uint64_t>(value), 8);
  return out;
}

int64_t decodeCounter(const std::string &bytes) {
  if (bytes.size() != 8)
    throw ProtocolError("a counter holds 8 bytes, not " +
                        std::to_string(bytes.size()));
  return static_cast<int64_t>(getLittleEndian(bytes.data(), 8));
}

uint32_t frameLength(const char *header) {
  return static_cast<uint32_t>(getLittleEndian(header, 4));
}

} // namespace gptrt::dist::protocol
