// Joining a data-parallel job and training as one of its ranks (see
// Worker.h).
#include "runtime/train/Worker.h"

#include "runtime/dist/Communicators.h"
#include "runtime/dist/Store.h"
#include "runtime/dist/StoreServer.h"

#include <memory>

namespace gptrt::train {

std::string storeBindAddress(const std::string &masterAddr) {
  bool loopback = masterAddr == "localhost" || masterAddr.rfind("127.", 0) == 0;
  return loopback ? "127.0.0.1" : "0.0.0.0";
}

float runWorker(const TrainOptions &options, const dist::WorkerInfo &me,
                std::chrono::milliseconds timeout) {
  if (me.worldSize == 1)
    return train(options);
  const auto port = static_cast<uint16_t>(me.masterPort);
  // Declared first, destroyed last: the other ranks' clients stay
  // connected until the final barrier.
  std::unique_ptr<dist::StoreServer> server;
  if (me.rank == 0)
    server = std::make_unique<dist::StoreServer>(
        port, storeBindAddress(me.masterAddr));
  dist::StoreClient store(me.masterAddr, port, me.rank, timeout);
  dist::GlooOptions gloo;
  gloo.timeout = timeout;
  std::unique_ptr<dist::Communicator> comm =
      dist::makeGlooCommunicator(store, me.rank, me.worldSize, gloo);
  float loss = train(options, *comm);
  // Rank 0 finishes last (final dump, sample): the others wait here rather
  // than leave while it may still need the connections.
  comm->barrier();
  return loss;
}

} // namespace gptrt::train
