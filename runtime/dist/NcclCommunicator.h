// The NCCL communicator for CUDA workers (gptrun --gpus G). NCCL is
// dlopened on first use (libnccl.so.2 from the CUDA image, or
// $GPTRT_NCCL_LIB), so nothing links against it (DESIGN.md section 5); the
// unique id travels through the rendezvous store. Built only with the CUDA
// toolkit; without it the factory says so.
#ifndef GPTRT_DIST_NCCLCOMMUNICATOR_H
#define GPTRT_DIST_NCCLCOMMUNICATOR_H

#include "runtime/dist/Communicator.h"

#include <chrono>
#include <memory>
#include <string>

namespace gptrt::dist {

class Store;

struct NcclOptions {
  // A collective (or the rendezvous) that has not finished after this long
  // aborts the communicator and throws: a peer died or stalled.
  std::chrono::milliseconds timeout = std::chrono::minutes(10);
  // Path of libnccl.so.2; empty: $GPTRT_NCCL_LIB, else the loader's search
  // (LD_LIBRARY_PATH, the CUDA image's library directories), else beside
  // the loaded cuBLASLt (LibrarySearch.h: pip's nvidia-nccl wheel).
  std::string library;
};

// Joins `worldSize` ranks over NCCL on the current CUDA device. `store` may
// be null for one rank (the id needs no travelling). Buffers may be device
// memory (used in place) or host memory (staged through a device buffer):
// the RankSync exchanges mix both. Every call returns once its result is
// in place. Throws std::runtime_error naming the fix when the library
// cannot be loaded, there is no CUDA device, or NCCL fails.
std::unique_ptr<Communicator> makeNcclCommunicator(Store *store, int rank,
                                                   int worldSize,
                                                   const NcclOptions &options = {});

} // namespace gptrt::dist

#endif // GPTRT_DIST_NCCLCOMMUNICATOR_H
