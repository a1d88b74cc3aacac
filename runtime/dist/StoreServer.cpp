// The store's server thread (see StoreServer.h): one poll loop over the
// listening socket, a wake-up pipe and every client connection.
#include "runtime/dist/StoreServer.h"

#include "runtime/dist/Socket.h"
#include "runtime/dist/StoreProtocol.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <optional>
#include <poll.h>
#include <stdexcept>
#include <sys/socket.h>
#include <thread>
#include <unistd.h>
#include <unordered_map>
#include <vector>

namespace gptrt::dist {

namespace {

using protocol::Op;

// A Get or Wait that cannot be answered yet.
struct Parked {
  bool isGet = false;
  std::vector<std::string> keys;
  Clock::time_point deadline;
};

struct Connection {
  Socket socket;
  std::string in;  // received bytes not yet handled
  std::string out; // reply bytes not yet sent
  // Clients send one request at a time, so while one is parked nothing
  // else from this connection is handled (which also keeps replies in
  // request order).
  std::optional<Parked> parked;
  bool closeAfterFlush = false; // after a protocol error
  bool gone = false;            // the peer hung up or the socket failed
};

Clock::time_point deadlineAfter(uint64_t milliseconds) {
  // Clamp so that "wait for ever" style values cannot overflow the clock.
  return Clock::now() +
         std::chrono::milliseconds(std::min<uint64_t>(milliseconds, 1ull << 40));
}

} // namespace

struct StoreServer::Impl {
  Socket listener;
  Socket wakeRead, wakeWrite;
  uint16_t port = 0;
  std::thread thread;
  std::unordered_map<std::string, std::string> data;
  std::vector<std::unique_ptr<Connection>> connections;

  void run();
  void serve();
  void acceptAll();
  void readFrom(Connection &c);
  void flush(Connection &c);
  // Handles the complete frames in c.in; true when any was handled.
  bool handleFrames(Connection &c);
  void handle(Connection &c, const std::string &body);
  // Answers c's parked request if its keys exist now; true when it did.
  bool answerParked(Connection &c);
  void expireParked(Connection &c);
  void reply(Connection &c, const protocol::Writer &w) { c.out += w.frame(); }
  bool has(const std::string &key) const { return data.count(key) != 0; }
};

StoreServer::StoreServer(uint16_t port, const std::string &bindAddress)
    : impl_(std::make_unique<Impl>()) {
  std::string error;
  impl_->listener = listenTcp(bindAddress, port, error);
  if (!impl_->listener.valid())
    throw std::runtime_error(
        "rank 0 cannot host the store on " + endpoint(bindAddress, port) +
        " (" + error +
        "): choose a free port in --master HOST:PORT (or stop the process "
        "using this one)");
  impl_->port = localPort(impl_->listener.fd());
  int pipeFds[2];
  if (::pipe2(pipeFds, O_NONBLOCK | O_CLOEXEC) != 0)
    throw std::runtime_error("rank 0 cannot create the store's wake-up pipe (" +
                             errnoText(errno) + ")");
  impl_->wakeRead.reset(pipeFds[0]);
  impl_->wakeWrite.reset(pipeFds[1]);
  impl_->thread = std::thread([impl = impl_.get()] { impl->run(); });
}

StoreServer::~StoreServer() {
  char byte = 1;
  while (::write(impl_->wakeWrite.fd(), &byte, 1) < 0 && errno == EINTR) {
  }
  impl_->thread.join();
}

uint16_t StoreServer::port() const { return impl_->port; }

void StoreServer::Impl::run() {
  try {
    serve();
  } catch (const std::exception &e) {
    // Nothing can catch this on the server thread; the clients will see
    // their requests fail.
    std::fprintf(stderr, "gptrun: the store server stopped: %s\n", e.what());
  }
}

void StoreServer::Impl::serve() {
  std::vector<pollfd> fds;
  for (;;) {
    fds.clear();
    fds.push_back({wakeRead.fd(), POLLIN, 0});
    fds.push_back({listener.fd(), POLLIN, 0});
    std::optional<Clock::time_point> nearest;
    for (auto &c : connections) {
      short events = c->closeAfterFlush ? 0 : POLLIN;
      if (!c->out.empty())
        events |= POLLOUT;
      fds.push_back({c->socket.fd(), events, 0});
      if (c->parked && (!nearest || c->parked->deadline < *nearest))
        nearest = c->parked->deadline;
    }
    int timeout = -1;
    if (nearest) {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          *nearest - Clock::now());
      timeout = static_cast<int>(std::clamp<long long>(left.count() + 1, 0,
                                                       1 << 30));
    }
    if (::poll(fds.data(), fds.size(), timeout) < 0) {
      if (errno == EINTR)
        continue;
      throw std::runtime_error("poll failed (" + errnoText(errno) + ")");
    }
    if (fds[0].revents)
      return; // the owner is shutting down

    const size_t polled = connections.size();
    for (size_t i = 0; i < polled; ++i) {
      Connection &c = *connections[i];
      short revents = fds[i + 2].revents;
      if (revents & (POLLIN | POLLHUP | POLLERR))
        readFrom(c);
      if (revents & POLLOUT)
        flush(c);
    }
    if (fds[1].revents & POLLIN)
      acceptAll();

    // A Set or Add on one connection can release requests parked on others,
    // whose connections may then have more requests queued: repeat until
    // nothing moves.
    for (bool progress = true; progress;) {
      progress = false;
      for (auto &c : connections) {
        if (c->gone)
          continue;
        if (c->parked)
          progress |= answerParked(*c);
        progress |= handleFrames(*c);
      }
    }
    for (auto &c : connections) {
      if (!c->gone)
        expireParked(*c);
      // Requests that arrived before a hang-up are still applied above;
      // their replies have nowhere to go.
      if (!c->gone && !c->out.empty())
        flush(*c);
    }
    connections.erase(
        std::remove_if(connections.begin(), connections.end(),
                       [](const std::unique_ptr<Connection> &c) {
                         return c->gone || (c->closeAfterFlush && c->out.empty());
                       }),
        connections.end());
  }
}

void StoreServer::Impl::acceptAll() {
  for (;;) {
    int fd = ::accept4(listener.fd(), nullptr, nullptr,
                       SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EINTR || errno == ECONNABORTED)
        continue;
      return; // EAGAIN, or out of descriptors: retried on the next wake-up
    }
    int one = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    auto c = std::make_unique<Connection>();
    c->socket.reset(fd);
    connections.push_back(std::move(c));
  }
}

void StoreServer::Impl::readFrom(Connection &c) {
  char buffer[65536];
  for (;;) {
    ssize_t n = ::recv(c.socket.fd(), buffer, sizeof(buffer), 0);
    if (n > 0) {
      c.in.append(buffer, static_cast<size_t>(n));
      // A well-behaved client never has more than one request in flight.
      if (c.in.size() > 2 * (protocol::kMaxFrameBytes + 4)) {
        c.gone = true;
        return;
      }
      continue;
    }
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
      return;
    // Frames already received are still handled (a client may set a key
    // and exit at once); c.gone only drops the connection afterwards.
    handleFrames(c);
    c.gone = true;
    return;
  }
}

void StoreServer::Impl::flush(Connection &c) {
  while (!c.out.empty()) {
    ssize_t n = ::send(c.socket.fd(), c.out.data(), c.out.size(), MSG_NOSIGNAL);
    if (n > 0) {
      c.out.erase(0, static_cast<size_t>(n));
      continue;
    }
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
      return;
    c.gone = true;
    return;
  }
}

bool StoreServer::Impl::handleFrames(Connection &c) {
  bool handled = false;
  while (!c.parked && !c.closeAfterFlush && c.in.size() >= 4) {
    uint32_t length = protocol::frameLength(c.in.data());
    if (length == 0 || length > protocol::kMaxFrameBytes) {
      reply(c, protocol::Writer(Op::Error)
                   .str("request of " + std::to_string(length) +
                        " bytes refused: not a gptrun store client?"));
      c.closeAfterFlush = true;
      return true;
    }
    if (c.in.size() < 4 + static_cast<size_t>(length))
      break;
    std::string body = c.in.substr(4, length);
    c.in.erase(0, 4 + static_cast<size_t>(length));
    try {
      handle(c, body);
    } catch (const protocol::ProtocolError &e) {
      reply(c, protocol::Writer(Op::Error).str(e.what()));
      c.closeAfterFlush = true;
    }
    handled = true;
  }
  return handled;
}

void StoreServer::Impl::handle(Connection &c, const std::string &body) {
  protocol::Reader r(body);
  const Op op = r.op();
  switch (op) {
  case Op::Hello: {
    uint32_t magic = r.u32();
    r.u32(); // the client's version: it compares ours with its own
    r.u32(); // its rank
    r.end();
    if (magic != protocol::kMagic)
      throw protocol::ProtocolError("bad greeting");
    reply(c, protocol::Writer(Op::Ok).u32(protocol::kMagic).u32(protocol::kVersion));
    return;
  }
  case Op::Set: {
    std::string key = r.str();
    std::string value = r.str();
    r.end();
    data[std::move(key)] = std::move(value);
    reply(c, protocol::Writer(Op::Ok));
    return;
  }
  case Op::Get:
  case Op::Wait: {
    // Get waits for one key and returns it; Wait for several, returning none.
    Parked p;
    p.isGet = op == Op::Get;
    uint32_t count = p.isGet ? 1 : r.u32();
    for (uint32_t i = 0; i < count; ++i)
      p.keys.push_back(r.str());
    p.deadline = deadlineAfter(r.u64());
    r.end();
    c.parked = std::move(p);
    if (!answerParked(c))
      expireParked(c);
    return;
  }
  case Op::Add: {
    std::string key = r.str();
    int64_t delta = r.i64();
    r.end();
    auto it = data.find(key);
    int64_t value = 0;
    if (it != data.end()) {
      if (it->second.size() != 8) {
        reply(c, protocol::Writer(Op::Error)
                     .str("the key holds a " +
                          std::to_string(it->second.size()) +
                          "-byte value set with set(), not a counter: use "
                          "another key for add()"));
        return;
      }
      value = protocol::decodeCounter(it->second);
    }
    // Wrap-around rather than undefined behaviour on overflow.
    value = static_cast<int64_t>(static_cast<uint64_t>(value) +
                                 static_cast<uint64_t>(delta));
    data[key] = protocol::encodeCounter(value);
    reply(c, protocol::Writer(Op::Counter).i64(value));
    return;
  }
  default:
    throw protocol::ProtocolError("unknown request");
  }
}

bool StoreServer::Impl::answerParked(Connection &c) {
  const Parked &p = *c.parked;
  for (const std::string &key : p.keys)
    if (!has(key))
      return false;
  if (p.isGet)
    reply(c, protocol::Writer(Op::Value).str(data[p.keys[0]]));
  else
    reply(c, protocol::Writer(Op::Ok));
  c.parked.reset();
  return true;
}

void StoreServer::Impl::expireParked(Connection &c) {
  if (!c.parked || Clock::now() < c.parked->deadline)
    return;
  protocol::Writer w(Op::Timeout);
  if (!c.parked->isGet) {
    std::vector<const std::string *> missing;
    for (const std::string &key : c.parked->keys)
      if (!has(key))
        missing.push_back(&key);
    w.u32(static_cast<uint32_t>(missing.size()));
    for (const std::string *key : missing)
      w.str(*key);
  }
  reply(c, w);
  c.parked.reset();
}

} // namespace gptrt::dist
