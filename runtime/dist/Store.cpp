// The store client and the store barrier (see Store.h).
#include "runtime/dist/Store.h"

#include "runtime/dist/StoreProtocol.h"

#include <cctype>
#include <cstdio>
#include <stdexcept>
#include <thread>

namespace gptrt::dist {

namespace {

using protocol::Op;

// How long after a Get/Wait's own timeout the client still waits for the
// server's Timeout reply before deciding the server itself is stuck.
constexpr std::chrono::milliseconds kReplyGrace(10000);

// A key as messages show it: quoted, non-printable bytes escaped, long keys
// cut short.
std::string quote(const std::string &key) {
  std::string out = "'";
  for (size_t i = 0; i < key.size() && i < 80; ++i) {
    unsigned char c = static_cast<unsigned char>(key[i]);
    if (std::isprint(c)) {
      out += static_cast<char>(c);
    } else {
      char escaped[8];
      std::snprintf(escaped, sizeof(escaped), "\\x%02x", c);
      out += escaped;
    }
  }
  if (key.size() > 80)
    out += "...";
  return out + "'";
}

std::string quoteList(const std::vector<std::string> &keys) {
  std::string out;
  for (size_t i = 0; i < keys.size() && i < 4; ++i)
    out += (i ? ", " : "") + quote(keys[i]);
  if (keys.size() > 4)
    out += " and " + std::to_string(keys.size() - 4) + " more";
  return out;
}

uint64_t milliseconds(std::chrono::milliseconds timeout) {
  return timeout.count() > 0 ? static_cast<uint64_t>(timeout.count()) : 0;
}

} // namespace

StoreClient::StoreClient(std::string host, uint16_t port, int rank,
                         std::chrono::milliseconds timeout)
    : host_(std::move(host)), port_(port), rank_(rank), timeout_(timeout) {
  ConnectFailure failure;
  socket_ = connectTcp(host_, port_, Clock::now() + timeout_, failure);
  if (failure.permanent)
    throw std::runtime_error(
        who() + " cannot resolve the store host '" + host_ + "' (" +
        failure.reason +
        "): check --master (HOST:PORT, HOST an IPv4 address or a name this "
        "machine resolves)");
  if (!socket_.valid())
    throw std::runtime_error(who() + " could not reach the store at " +
                             endpoint(host_, port_) + " after " +
                             formatDuration(timeout_) + " (" + failure.reason +
                             "): check --master and that node 0 is running");
  handshake();
}

std::string StoreClient::who() const { return "rank " + std::to_string(rank_); }

std::string StoreClient::localAddress() const {
  return ::gptrt::dist::localAddress(socket_.fd());
}

void StoreClient::handshake() {
  std::string frame = protocol::Writer(Op::Hello)
                          .u32(protocol::kMagic)
                          .u32(protocol::kVersion)
                          .u32(static_cast<uint32_t>(rank_))
                          .frame();
  const std::string notAStore =
      who() + " reached " + endpoint(host_, port_) +
      " but what listens there is not a gptrun store";
  std::string reply;
  try {
    reply = request(frame, "greeting the store", Clock::now() + timeout_);
  } catch (const std::runtime_error &) {
    // Something that accepts and then hangs up or stays silent is most
    // likely another service on the port.
    throw std::runtime_error(notAStore +
                             " (it hung up or did not answer the greeting): "
                             "check the port in --master");
  }
  try {
    protocol::Reader r(reply);
    if (r.op() != Op::Ok || r.u32() != protocol::kMagic)
      throw protocol::ProtocolError("unexpected greeting");
    uint32_t version = r.u32();
    if (version != protocol::kVersion)
      throw std::runtime_error(
          who() + ": the store at " + endpoint(host_, port_) +
          " speaks protocol version " + std::to_string(version) +
          ", this build speaks " + std::to_string(protocol::kVersion) +
          ": run the same gptrun build on every node");
  } catch (const protocol::ProtocolError &e) {
    throw std::runtime_error(notAStore + " (" + e.what() +
                             "): check the port in --master");
  }
}

void StoreClient::fail(const std::string &what, const std::string &why) {
  broken_ = why;
  socket_.reset();
  throw std::runtime_error(who() + " " + why + " while " + what);
}

std::string StoreClient::request(const std::string &frame,
                                 const std::string &what,
                                 Clock::time_point deadline) {
  std::lock_guard<std::mutex> lock(mutex_);
  const std::string at = endpoint(host_, port_);
  if (!socket_.valid())
    throw std::runtime_error(who() + " cannot use the store at " + at +
                             " any more (earlier: " + broken_ + ") while " +
                             what);
  const std::string lost =
      "lost its connection to the store at " + at +
      " (closed by the other end); rank 0, which hosts the store, has "
      "probably exited: see its log";
  std::string error;
  switch (sendAll(socket_.fd(), frame.data(), frame.size(), deadline, error)) {
  case IoStatus::Ok:
    break;
  case IoStatus::Closed:
    fail(what, lost);
  case IoStatus::TimedOut:
    fail(what, "could not send to the store at " + at +
                   " in time: check that node 0 is responsive");
  case IoStatus::Failed:
    fail(what, "failed to send to the store at " + at + " (" + error + ")");
  }
  char header[4];
  IoStatus status = recvAll(socket_.fd(), header, sizeof(header), deadline, error);
  std::string body;
  if (status == IoStatus::Ok) {
    uint32_t length = protocol::frameLength(header);
    if (length == 0 || length > protocol::kMaxFrameBytes)
      fail(what, "got a malformed reply (length " + std::to_string(length) +
                     ") from " + at);
    body.resize(length);
    status = recvAll(socket_.fd(), body.data(), length, deadline, error);
  }
  switch (status) {
  case IoStatus::Ok:
    return body;
  case IoStatus::Closed:
    fail(what, lost);
  case IoStatus::TimedOut:
    fail(what, "got no reply from the store at " + at +
                   " in time: check that node 0 is responsive");
  case IoStatus::Failed:
    fail(what, "failed to read from the store at " + at + " (" + error + ")");
  }
  return body;
}

void StoreClient::set(const std::string &key, const std::string &value) {
  std::string what = "setting key " + quote(key);
  std::string reply = request(
      protocol::Writer(Op::Set).str(key).str(value).frame(), what,
      Clock::now() + timeout_);
  protocol::Reader r(reply);
  if (r.op() != Op::Ok)
    throw std::runtime_error(who() + ": the store at " +
                             endpoint(host_, port_) +
                             " gave an unexpected reply while " + what);
}

std::string StoreClient::get(const std::string &key,
                             std::chrono::milliseconds timeout) {
  std::string what = "waiting for key " + quote(key);
  std::string reply =
      request(protocol::Writer(Op::Get).str(key).u64(milliseconds(timeout))
                  .frame(),
              what, Clock::now() + timeout + kReplyGrace);
  protocol::Reader r(reply);
  Op op = r.op();
  if (op == Op::Value)
    return r.str();
  if (op == Op::Timeout)
    throw std::runtime_error(
        who() + " timed out after " + formatDuration(timeout) + " " + what +
        " in the store at " + endpoint(host_, port_) +
        ": the rank that sets it has not started or has failed; check that "
        "every rank is running and see their logs");
  throw std::runtime_error(who() + ": the store at " + endpoint(host_, port_) +
                           " gave an unexpected reply while " + what);
}

void StoreClient::wait(const std::vector<std::string> &keys,
                       std::chrono::milliseconds timeout) {
  protocol::Writer request_(Op::Wait);
  request_.u32(static_cast<uint32_t>(keys.size()));
  for (const std::string &key : keys)
    request_.str(key);
  request_.u64(milliseconds(timeout));
  std::string what = "waiting for keys " + quoteList(keys);
  std::string reply = request(request_.frame(), what,
                              Clock::now() + timeout + kReplyGrace);
  protocol::Reader r(reply);
  Op op = r.op();
  if (op == Op::Ok)
    return;
  if (op == Op::Timeout) {
    std::vector<std::string> missing(r.u32());
    for (std::string &key : missing)
      key = r.str();
    throw std::runtime_error(
        who() + " timed out after " + formatDuration(timeout) +
        " waiting for keys " + quoteList(missing) + " (" +
        std::to_string(missing.size()) + " of " + std::to_string(keys.size()) +
        " missing) in the store at " + endpoint(host_, port_) +
        ": the ranks that set them have not started or have failed; check "
        "that every rank is running and see their logs");
  }
  throw std::runtime_error(who() + ": the store at " + endpoint(host_, port_) +
                           " gave an unexpected reply while " + what);
}

int64_t StoreClient::add(const std::string &key, int64_t delta) {
  std::string what = "adding to counter " + quote(key);
  std::string reply = request(
      protocol::Writer(Op::Add).str(key).i64(delta).frame(), what,
      Clock::now() + timeout_);
  protocol::Reader r(reply);
  Op op = r.op();
  if (op == Op::Counter)
    return r.i64();
  if (op == Op::Error)
    throw std::runtime_error(who() + ": the store refused " + what + ": " +
                             r.str());
  throw std::runtime_error(who() + ": the store at " + endpoint(host_, port_) +
                           " gave an unexpected reply while " + what);
}

void storeBarrier(Store &store, const std::string &name, int worldSize,
                  std::chrono::milliseconds timeout) {
  // The last rank to arrive opens the barrier for everyone.
  if (store.add(name + "/count", 1) == worldSize)
    store.set(name + "/open", "");
  store.wait({name + "/open"}, timeout);
}

} // namespace gptrt::dist
