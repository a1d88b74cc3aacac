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

int usableDeviceCount() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    cudaGetLastError();
    return 0;
  }
  return count;
}

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
  maxSharedBytesPerBlock_ = prop.sharedMemPerBlockOptin;
  // Non-blocking: the legacy default stream must never serialise with ours.
  check(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking),
        "cudaStreamCreate");
  check(cublasLtCreate(&lt_), "cublasLtCreate");
  // 32 MiB is what cuBLAS recommends for Hopper (cuBLAS docs, "cuBLASLt
  // workspace"); one workspace serves every GEMM since they share a stream.
  workspaceBytes_ = size_t(32) << 20;
  check(cudaMalloc(&workspace_, workspaceBytes_), "cudaMalloc(workspace)");
  check(cudaMalloc(&gemmScales_, 2 * sizeof(float)), "cudaMalloc(scales)");
  check(cudaMalloc(&stepScalars_, 3 * sizeof(float)), "cudaMalloc(step scalars)");
  uploadStepScalars(1.0f, 0.0f, 0.0f);
  const float ones[2] = {1.0f, 1.0f};
  check(cudaMalloc(&unitScales_, sizeof ones), "cudaMalloc(unit scales)");
  // On our stream, as every later reader: a plain cudaMemcpy runs on the
  // legacy stream, which a non-blocking stream does not wait for.
  check(cudaMemcpyAsync(unitScales_, ones, sizeof ones, cudaMemcpyHostToDevice,
                        stream_),
        "cudaMemcpyAsync(unit scales)");
}

DeviceImpl::~DeviceImpl() {
  // Destructors must not throw: errors here are ignored.
  if (stream_)
    cudaStreamSynchronize(stream_);
  for (cudaEvent_t event : bucketEvents_)
    if (event)
      cudaEventDestroy(event);
  plans_.clear();
  if (lt_)
    cublasLtDestroy(lt_);
  cudaFree(workspace_);
  dropGraphs();
  cudaFree(stepScalars_);
  cudaFree(unitScales_);
  cudaFree(castStats_);
  cudaFree(scratch_.data);
  cudaFree(gemmScales_);
  cudaFree(bf16Bias_.data);
  cudaFree(attentionStaging_.data);
  cudaFree(fp8Operands_.data);
  cudaFree(rowwiseDequant_.data);
  if (stream_)
    cudaStreamDestroy(stream_);
}

void *DeviceImpl::recordBucketEvent(int64_t bucket) {
  if (bucket < 0)
    throw std::invalid_argument("bucket " + std::to_string(bucket) +
                                ", expected >= 0");
  if (size_t(bucket) >= bucketEvents_.size())
    bucketEvents_.resize(size_t(bucket) + 1, nullptr);
  cudaEvent_t &event = bucketEvents_[size_t(bucket)];
  if (!event)
    check(cudaEventCreateWithFlags(&event, cudaEventDisableTiming),
          "cudaEventCreate (gradient bucket)");
  check(cudaEventRecord(event, stream_), "cudaEventRecord (gradient bucket)");
  return event;
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

void DeviceImpl::uploadStepScalars(float lossScale, float learningRate,
                                   float step) {
  const float values[3] = {lossScale, learningRate, step};
  // Pageable source: cudaMemcpyAsync stages it before returning, so the
  // local may go out of scope.
  check(cudaMemcpyAsync(stepScalars_, values, sizeof values,
                        cudaMemcpyHostToDevice, stream_),
        "step scalars upload");
}

void DeviceImpl::copyStepScalar(float *out, int64_t which) {
  if (which < 0 || which > 2)
    throw std::out_of_range("step scalar " + std::to_string(which) +
                            " is out of range, expected 0..2");
  check(cudaMemcpyAsync(out, stepScalars_ + which, sizeof(float),
                        cudaMemcpyDeviceToDevice, stream_),
        "gptrt_step_scalar copy");
}

void DeviceImpl::captureGraph(int slot, const std::function<void()> &enqueue) {
  if (slot < 0)
    throw std::out_of_range("graph slot " + std::to_string(slot));
  // Thread-local mode: the communication thread's CUDA calls (NCCL) are
  // not part of this capture.
  check(cudaStreamBeginCapture(stream_, cudaStreamCaptureModeThreadLocal),
        "cudaStreamBeginCapture");
  try {
    enqueue();
  } catch (...) {
    cudaGraph_t abandoned = nullptr;
    cudaStreamEndCapture(stream_, &abandoned);
    if (abandoned)
      cudaGraphDestroy(abandoned);
    cudaGetLastError();
    throw;
  }
  cudaGraph_t graph = nullptr;
  cudaError_t status = cudaStreamEndCapture(stream_, &graph);
  cudaGraphExec_t exec = nullptr;
  if (status == cudaSuccess) {
    status = cudaGraphInstantiate(&exec, graph, 0);
    cudaGraphDestroy(graph);
  } else if (graph) {
    cudaGraphDestroy(graph);
  }
  if (status != cudaSuccess) {
    // Cleared, so that the next launch's check does not report it as its own.
    cudaGetLastError();
    check(status, "capturing a CUDA graph (an operation of this entry point "
                  "cannot be captured; run without --cuda-graphs)");
  }
  if (static_cast<size_t>(slot) >= graphs_.size())
    graphs_.resize(static_cast<size_t>(slot) + 1, nullptr);
  if (graphs_[slot])
    cudaGraphExecDestroy(graphs_[slot]);
  graphs_[slot] = exec;
}

bool DeviceImpl::hasGraph(int slot) const {
  return slot >= 0 && static_cast<size_t>(slot) < graphs_.size() &&
         graphs_[slot] != nullptr;
}

void DeviceImpl::launchGraph(int slot) {
  if (!hasGraph(slot))
    throw std::logic_error("no CUDA graph in slot " + std::to_string(slot));
  check(cudaGraphLaunch(graphs_[slot], stream_), "cudaGraphLaunch");
}

void DeviceImpl::dropGraphs() {
  for (cudaGraphExec_t &exec : graphs_)
    if (exec) {
      cudaGraphExecDestroy(exec);
      exec = nullptr;
    }
}

void *DeviceImpl::grow(GrowingBuffer &buffer, size_t bytes, size_t minimum,
                       const char *what) {
  if (bytes <= buffer.bytes)
    return buffer.data;
  cudaStreamCaptureStatus capturing = cudaStreamCaptureStatusNone;
  check(cudaStreamIsCapturing(stream_, &capturing), "cudaStreamIsCapturing");
  if (capturing != cudaStreamCaptureStatusNone)
    throw std::runtime_error(
        std::string("the ") + what + " must grow to " + std::to_string(bytes) +
        " bytes while a CUDA graph is being captured (the warm-up call should "
        "have sized it): run without --cuda-graphs");
  // Kernels already queued may still read the old buffer, and graphs hold
  // its address.
  synchronize();
  dropGraphs();
  cudaFree(buffer.data);
  buffer = {};
  const size_t grown = bytes < minimum ? minimum : bytes;
  check(cudaMalloc(&buffer.data, grown),
        (std::string("cudaMalloc(") + what + ")").c_str());
  buffer.bytes = grown;
  return buffer.data;
}

void *DeviceImpl::scratch(size_t bytes) {
  return grow(scratch_, bytes, size_t(1) << 20, "scratch buffer");
}

} // namespace gptrt::cuda
