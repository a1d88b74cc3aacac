// The store's wire format, shared by client and server. Every message is a
// frame: a little-endian uint32 body length, then the body. A body starts
// with an Op byte; integers are little-endian, strings are a uint32 length
// plus raw bytes (keys and values may hold any bytes).
//
//   request                                   reply
//   Hello magic:u32 version:u32 rank:i32      Ok magic:u32 version:u32
//   Set   key:str value:str                   Ok
//   Get   key:str timeout_ms:u64              Value value:str | Timeout
//   Wait  count:u32 key:str... timeout_ms:u64 Ok | Timeout count:u32 key:str...
//   Add   key:str delta:i64                   Counter value:i64 | Error text:str
//
// Get and Wait are answered by the server when the keys exist or their
// timeout passes (Wait's Timeout lists the keys still missing), so a waiting
// client costs nothing and needs no polling. A counter is an 8-byte
// little-endian int64 value; Get on a counter key returns those 8 bytes.
#ifndef GPTRT_DIST_STOREPROTOCOL_H
#define GPTRT_DIST_STOREPROTOCOL_H

#include <cstdint>
#include <stdexcept>
#include <string>

namespace gptrt::dist::protocol {

constexpr uint32_t kMagic = 0x53545047; // "GPTS" on the wire
constexpr uint32_t kVersion = 1;
// Larger frames are refused: a peer sending one is not a store client (or
// is confused), and the length must not make the server allocate gigabytes.
constexpr uint32_t kMaxFrameBytes = 256u << 20;

enum class Op : uint8_t {
  Hello = 1,
  Set = 2,
  Get = 3,
  Wait = 4,
  Add = 5,
  Ok = 0x80,
  Value = 0x81,
  Timeout = 0x82,
  Counter = 0x83,
  Error = 0x84,
};

// A body that ended early or has an unknown op.
struct ProtocolError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

class Writer {
public:
  explicit Writer(Op op) { u8(static_cast<uint8_t>(op)); }
  Writer &u8(uint8_t v);
  Writer &u32(uint32_t v);
  Writer &u64(uint64_t v);
  Writer &i64(int64_t v) { return u64(static_cast<uint64_t>(v)); }
  Writer &str(const std::string &v);
  // The length prefix followed by the body.
  std::string frame() const;

private:
  std::string body_;
};

class Reader {
public:
  explicit Reader(const std::string &body) : body_(body) {}
  Op op() { return static_cast<Op>(u8()); }
  uint8_t u8();
  uint32_t u32();
  uint64_t u64();
  int64_t i64() { return static_cast<int64_t>(u64()); }
  std::string str();
  // Throws ProtocolError when bytes are left over.
  void end() const;

private:
  const char *take(size_t n);
  const std::string &body_;
  size_t pos_ = 0;
};

// The little-endian bytes of a counter value and back; decodeCounter throws
// ProtocolError unless given exactly 8 bytes.
std::string encodeCounter(int64_t value);
int64_t decodeCounter(const std::string &bytes);

// The body length a frame header announces (the first 4 bytes of `header`).
uint32_t frameLength(const char *header);

} // namespace gptrt::dist::protocol

#endif // GPTRT_DIST_STOREPROTOCOL_H
