// Joining a data-parallel job and training as one of its ranks (see
// Worker.h).
#include "runtime/train/Worker.h"

#include "runtime/dist/Communicators.h"
#include "runtime/dist/NcclCommunicator.h"
#include "runtime/dist/Store.h"
#include "runtime/dist/StoreServer.h"
#include "runtime/train/Launch.h"

#include <cstdlib>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <vector>

namespace gptrt::train {

std::string storeBindAddress(const std::string &masterAddr) {
  bool loopback = masterAddr == "localhost" || masterAddr.rfind("127.", 0) == 0;
  return loopback ? "127.0.0.1" : "0.0.0.0";
}

namespace {

// The entries of a CUDA_VISIBLE_DEVICES list (indices or UUIDs).
std::vector<std::string> visibleDevices(const std::string &visible) {
  std::vector<std::string> devices;
  std::stringstream list(visible);
  for (std::string item; std::getline(list, item, ',');)
    if (!item.empty())
      devices.push_back(item);
  return devices;
}

} // namespace

std::string gpuForWorker(int localRank, int gpuWorkers,
                         const std::string &visible) {
  std::vector<std::string> devices = visibleDevices(visible);
  if (visible.empty())
    for (int i = 0; i < gpuWorkers; ++i)
      devices.push_back(std::to_string(i));
  if (localRank < 0 || localRank >= static_cast<int>(devices.size()))
    throw std::runtime_error(
        "GPU worker " + std::to_string(localRank) + " of " +
        std::to_string(gpuWorkers) + " has no GPU: CUDA_VISIBLE_DEVICES=" +
        (visible.empty() ? std::string("(unset)") : visible) + " lists " +
        std::to_string(devices.size()) + "; use --gpus " +
        std::to_string(devices.size()) + " or list more GPUs");
  return devices[static_cast<size_t>(localRank)];
}

std::optional<std::string> gpuForLaunchedWorker(int localRank,
                                                const std::string &visible) {
  const std::vector<std::string> devices = visibleDevices(visible);
  if (devices.size() == 1)
    return std::nullopt;
  if (devices.empty())
    return std::to_string(localRank);
  if (localRank < 0 || localRank >= static_cast<int>(devices.size()))
    throw std::runtime_error(
        "worker with LOCAL_RANK " + std::to_string(localRank) +
        " has no GPU: CUDA_VISIBLE_DEVICES=" + visible + " lists " +
        std::to_string(devices.size()) +
        "; start at most that many GPU workers per node, or give each its "
        "own GPU (srun --gpus-per-task=1)");
  return devices[static_cast<size_t>(localRank)];
}

float runWorker(const TrainOptions &options, const dist::WorkerInfo &me,
                std::chrono::milliseconds timeout) {
  const bool gpu = options.device == "cuda";
  if (gpu) {
    // Before the first CUDA call of this process: from here on "device 0"
    // is this worker's GPU.
    if (const char *workers = std::getenv(kGpuWorkersVariable)) {
      const char *visible = std::getenv("CUDA_VISIBLE_DEVICES");
      std::string mine = gpuForWorker(me.localRank, std::atoi(workers),
                                      visible ? visible : "");
      ::setenv("CUDA_VISIBLE_DEVICES", mine.c_str(), 1);
    }
  } else if (me.worldSize == 1) {
    return train(options);
  }
  const auto port = static_cast<uint16_t>(me.masterPort);
  // Declared first, destroyed last: the other ranks' clients stay
  // connected until the final barrier.
  std::unique_ptr<dist::StoreServer> server;
  std::unique_ptr<dist::StoreClient> store;
  if (me.worldSize > 1) {
    if (me.rank == 0)
      server = std::make_unique<dist::StoreServer>(
          port, storeBindAddress(me.masterAddr));
    store = std::make_unique<dist::StoreClient>(me.masterAddr, port, me.rank,
                                                timeout);
  }
  std::unique_ptr<dist::Communicator> comm;
  if (gpu) {
    // One GPU worker uses NCCL too: the same path as many, on one GPU.
    dist::NcclOptions nccl;
    nccl.timeout = timeout;
    comm = dist::makeNcclCommunicator(store.get(), me.rank, me.worldSize, nccl);
  } else {
    dist::GlooOptions gloo;
    gloo.timeout = timeout;
    comm = dist::makeGlooCommunicator(*store, me.rank, me.worldSize, gloo);
  }
  float loss = train(options, *comm);
  // Rank 0 finishes last (final dump, sample): the others wait here rather
  // than leave while it may still need the connections.
  comm->barrier();
  return loss;
}

} // namespace gptrt::train
