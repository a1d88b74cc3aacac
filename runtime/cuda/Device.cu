// The CUDA device behind a Context: opening GPU 0 with a clear message when
// there is none, its one stream, device memory, host<->device copies and
// the scratch buffer kernels share.
#include "runtime/cuda/DeviceImpl.h"

#include <string>

namespace gptrt::cuda {

void check(cudaError_t status, const char *what) {
  if (status == cudaSuccess)
    return;
  throw std::runtime_error(std::string(what) + ": CUDA error " +
                           cudaGetErrorName(status) + " (" +
                           cudaGetErrorString(status) + ")");
}

void check(cublasStatus_t status, const char *what) {
  if (status == CUBLAS_STATUS_SUCCESS)
    return;
  throw std::runtime_error(std::string(what) + ": cuBLASLt error " +
                           std::to_string(static_cast<int>(status)) + " (" +
                           cublasLtGetStatusString(status) + ")");
}

bool built() { return true; }

std::unique_ptr<Device> openDevice() {
  int count = 0;
  cudaError_t status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess || count == 0) {
    // Clear the sticky error so later CUDA calls are not confused by it.
    cudaGetLastError();
    std::string why = status != cudaSuccess
                          ? std::string(cudaGetErrorName(status)) + ": " +
                                cudaGetErrorString(status)
                          : std::string("0 devices");
    throw std::runtime_error("no CUDA device found (cudaGetDeviceCount: " +
                             why +
                             "): run on a machine with an NVIDIA GPU and "
                             "driver, or use --device cpu");
  }
  return std::make_unique<DeviceImpl>(0);
}

namespace {
void freeDevice(void *p) { cudaFree(p); }
} // namespace

DeviceImpl::DeviceImpl(int ordinal) : ordinal_(ordinal) {
  check(cudaSetDevice(ordinal), "cudaSetDevice");
  cudaDeviceProp prop{};
  check(cudaGetDeviceProperties(&prop, ordinal), "cudaGetDeviceProperties");
  cc_ = prop.major * 10 + prop.minor;
  name_ = prop.name;
  // Non-blocking: the legacy default stream must never serialise with ours.
  check(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking),
        "cudaStreamCreate");
  check(cublasLtCreate(&lt_), "cublasLtCreate");
  // 32 MiB is what cuBLAS recommends for Hopper (cuBLAS docs, "cuBLASLt
  // workspace"); one workspace serves every GEMM since they share a stream.
  workspaceBytes_ = size_t(32) << 20;
  check(cudaMalloc(&workspace_, workspaceBytes_), "cudaMalloc(workspace)");
  check(cudaMalloc(&gemmScales_, 2 * sizeof(float)), "cudaMalloc(scales)");
}

DeviceImpl::~DeviceImpl() {
  // Destructors must not throw: errors here are ignored.
  if (stream_)
    cudaStreamSynchronize(stream_);
  plans_.clear();
  if (lt_)
    cublasLtDestroy(lt_);
  cudaFree(workspace_);
  cudaFree(scratch_);
  cudaFree(gemmScales_);
  if (stream_)
    cudaStreamDestroy(stream_);
}

std::string DeviceImpl::description() const {
  return name_ + " (compute capability " + std::to_string(cc_ / 10) + "." +
         std::to_string(cc_ % 10) + ")";
}

void *DeviceImpl::allocZeroed(size_t bytes, const std::string &what) {
  void *p = nullptr;
  // A zero-size arena still gets a distinct, valid address, as on the CPU.
  cudaError_t status = cudaMalloc(&p, bytes == 0 ? 256 : bytes);
  if (status != cudaSuccess) {
    cudaGetLastError();
    size_t freeBytes = 0, total = 0;
    cudaMemGetInfo(&freeBytes, &total);
    throw std::runtime_error(
        "cannot allocate " + what + " of " + std::to_string(bytes) +
        " bytes on the GPU (" + cudaGetErrorString(status) + ", " +
        std::to_string(freeBytes >> 20) + " MiB free): use a smaller batch");
  }
  check(cudaMemsetAsync(p, 0, bytes == 0 ? 256 : bytes, stream_),
        "cudaMemset(arena)");
  check(cudaStreamSynchronize(stream_), "cudaStreamSynchronize");
  return p;
}

Device::FreeFn DeviceImpl::freeFunction() const { return &freeDevice; }

void DeviceImpl::zero(void *dst, size_t bytes) {
  check(cudaMemsetAsync(dst, 0, bytes, stream_), "cudaMemsetAsync");
}

void DeviceImpl::toDevice(void *dst, const void *src, size_t bytes) {
  check(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, stream_),
        "cudaMemcpy(host to device)");
  synchronize();
}

void DeviceImpl::toHost(void *dst, const void *src, size_t bytes) {
  check(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, stream_),
        "cudaMemcpy(device to host)");
  synchronize();
}

void DeviceImpl::synchronize() {
  check(cudaStreamSynchronize(stream_), "a kernel of this step");
}

void DeviceImpl::setScalar(float *out, float value) {
  // Pageable source: cudaMemcpyAsync stages it before returning, so the
  // local may go out of scope.
  check(cudaMemcpyAsync(out, &value, sizeof value, cudaMemcpyHostToDevice,
                        stream_),
        "gptrt_step_scalar copy");
}

void *DeviceImpl::scratch(size_t bytes) {
  if (bytes <= scratchBytes_)
    return scratch_;
  // Kernels already queued may still read the old buffer.
  synchronize();
  cudaFree(scratch_);
  scratch_ = nullptr;
  scratchBytes_ = 0;
  size_t grown = bytes < (size_t(1) << 20) ? size_t(1) << 20 : bytes;
  check(cudaMalloc(&scratch_, grown), "cudaMalloc(scratch)");
  scratchBytes_ = grown;
  return scratch_;
}

} // namespace gptrt::cuda
