// The store's server: a thread in rank 0's process that holds the keys and
// answers every rank's StoreClient (protocol in StoreProtocol.h). Waiting
// requests (get, wait) are parked on the server until their keys appear or
// their timeout passes, so waiting ranks send nothing while they wait.
#ifndef GPTRT_DIST_STORESERVER_H
#define GPTRT_DIST_STORESERVER_H

#include <cstdint>
#include <memory>
#include <string>

namespace gptrt::dist {

class StoreServer {
public:
  // Listens on bindAddress:port (port 0: a free port, see port()) and starts
  // serving. The default address accepts connections on every interface, as
  // other nodes need. Throws std::runtime_error naming the address and the
  // fix when the port cannot be bound.
  explicit StoreServer(uint16_t port, const std::string &bindAddress = "0.0.0.0");
  // Stops the thread and closes every connection; clients still waiting get
  // a "lost its connection" error. Keep the server alive until every rank is
  // done with the store (e.g. after a final barrier).
  ~StoreServer();
  StoreServer(const StoreServer &) = delete;
  StoreServer &operator=(const StoreServer &) = delete;

  // The port it listens on (the chosen one when constructed with 0).
  uint16_t port() const;

private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

} // namespace gptrt::dist

#endif // GPTRT_DIST_STORESERVER_H
