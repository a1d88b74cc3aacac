// The CUDA backend's entry points in a runtime built without a CUDA toolkit
// (runtime/cuda is not compiled then): asking for the device explains why
// there is none.
#include "runtime/cuda/Backend.h"

#include <stdexcept>

namespace gptrt::cuda {

bool built() { return false; }

int usableDeviceCount() { return 0; }

std::unique_ptr<Device> openDevice() {
  throw std::runtime_error(
      "device 'cuda' is not built into this runtime (no CUDA toolkit was "
      "found when it was configured): rebuild with the toolkit at "
      "/usr/local/cuda, or run with --device cpu");
}

} // namespace gptrt::cuda
