// makeNcclCommunicator for runtimes built without the CUDA toolkit.
#include "runtime/dist/NcclCommunicator.h"

#include <stdexcept>

namespace gptrt::dist {

std::unique_ptr<Communicator> makeNcclCommunicator(Store *, int, int,
                                                   const NcclOptions &) {
  throw std::runtime_error(
      "this gptrun was built without the CUDA toolkit, so it has no NCCL "
      "communicator for GPU workers: rebuild with CUDA 13 at /usr/local/cuda, "
      "or train on the CPU with --device cpu --procs P");
}

} // namespace gptrt::dist
