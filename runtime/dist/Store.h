// The rendezvous key-value store every rank of a data-parallel job shares:
// rank 0 hosts a StoreServer (StoreServer.h), every rank (rank 0 included)
// talks to it through a StoreClient. It carries the few bytes ranks must
// exchange before they can talk directly: Gloo's pair addresses, the NCCL
// unique id, barrier counters.
//
// `Store` is the interface; the Gloo communicator library receives one by
// reference and only calls its virtual functions, so that library needs no
// copy of the client code.
#ifndef GPTRT_DIST_STORE_H
#define GPTRT_DIST_STORE_H

#include "runtime/dist/Socket.h"

#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

namespace gptrt::dist {

class Store {
public:
  virtual ~Store() = default;

  // Creates or replaces `key`.
  virtual void set(const std::string &key, const std::string &value) = 0;
  // The value of `key`, waiting until some rank sets it. Throws
  // std::runtime_error when `timeout` passes first.
  virtual std::string get(const std::string &key,
                          std::chrono::milliseconds timeout) = 0;
  // Returns when every key exists; throws std::runtime_error naming the
  // missing ones when `timeout` passes first.
  virtual void wait(const std::vector<std::string> &keys,
                    std::chrono::milliseconds timeout) = 0;
  // Adds `delta` to the counter `key` (created at 0) and returns the new
  // value, atomically with respect to every other rank.
  virtual int64_t add(const std::string &key, int64_t delta) = 0;
  // The timeout get(key) and wait(keys) use.
  virtual std::chrono::milliseconds timeout() const = 0;

  std::string get(const std::string &key) { return get(key, timeout()); }
  void wait(const std::vector<std::string> &keys) { wait(keys, timeout()); }
};

// A connection to the store at host:port. One request at a time: concurrent
// calls from several threads are serialised, so a thread blocked in get()
// delays the others; give each thread its own client when they must wait
// independently.
class StoreClient final : public Store {
public:
  // Connects, retrying with backoff until `timeout` (workers may start
  // before rank 0 listens), and checks that the server is a gptrun store.
  // Throws std::runtime_error naming rank, host, port and the fix when the
  // host does not resolve, nothing answers in time, or something else
  // listens there. `rank` only appears in messages.
  StoreClient(std::string host, uint16_t port, int rank,
              std::chrono::milliseconds timeout);

  void set(const std::string &key, const std::string &value) override;
  std::string get(const std::string &key,
                  std::chrono::milliseconds timeout) override;
  void wait(const std::vector<std::string> &keys,
            std::chrono::milliseconds timeout) override;
  int64_t add(const std::string &key, int64_t delta) override;
  std::chrono::milliseconds timeout() const override { return timeout_; }
  using Store::get;
  using Store::wait;

  const std::string &host() const { return host_; }
  uint16_t port() const { return port_; }
  int rank() const { return rank_; }
  // This end's IPv4 address: the address of the interface that reaches the
  // store, which is a good one for peers on the same network to reach this
  // rank at.
  std::string localAddress() const;

private:
  // Sends one request and returns the reply body. `what` says what the
  // request was for, in messages. Throws when the connection fails or no
  // reply arrives by `deadline`; the connection is then unusable.
  std::string request(const std::string &frame, const std::string &what,
                      Clock::time_point deadline);
  void handshake();
  [[noreturn]] void fail(const std::string &what, const std::string &why);
  std::string who() const;

  std::string host_;
  uint16_t port_;
  int rank_;
  std::chrono::milliseconds timeout_;
  std::mutex mutex_;
  Socket socket_;
  std::string broken_; // why the connection was given up, when it was
};

// A one-shot barrier over the store: returns once `worldSize` ranks have
// called it with the same `name`. Each barrier needs a fresh name (append a
// counter). Throws std::runtime_error after `timeout`.
void storeBarrier(Store &store, const std::string &name, int worldSize,
                  std::chrono::milliseconds timeout);

} // namespace gptrt::dist

#endif // GPTRT_DIST_STORE_H
