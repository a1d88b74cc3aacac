// dist::Communicator over NCCL, with libnccl.so.2 dlopened (see
// NcclCommunicator.h). nccl.h is used for types and signatures only.
#include "runtime/dist/NcclCommunicator.h"

#include "runtime/dist/LibrarySearch.h"
#include "runtime/dist/Store.h"

#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <nccl.h>

#include <algorithm>
#include <atomic>
#include <functional>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

namespace gptrt::dist {

namespace {

// The NCCL entry points this communicator calls, resolved from the library.
struct NcclApi {
  decltype(&ncclGetUniqueId) getUniqueId = nullptr;
  decltype(&ncclCommInitRank) commInitRank = nullptr;
  decltype(&ncclCommAbort) commAbort = nullptr;
  decltype(&ncclCommDestroy) commDestroy = nullptr;
  decltype(&ncclCommGetAsyncError) commGetAsyncError = nullptr;
  decltype(&ncclGetErrorString) getErrorString = nullptr;
  decltype(&ncclAllReduce) allReduce = nullptr;
  decltype(&ncclReduceScatter) reduceScatter = nullptr;
  decltype(&ncclAllGather) allGather = nullptr;
  decltype(&ncclBroadcast) broadcast = nullptr;
  decltype(&ncclSend) send = nullptr;
  decltype(&ncclRecv) recv = nullptr;
  decltype(&ncclGroupStart) groupStart = nullptr;
  decltype(&ncclGroupEnd) groupEnd = nullptr;
};

// Loaded once per process and kept: NCCL keeps threads that must not lose
// their code.
const NcclApi &loadNccl(const std::string &requested) {
  static std::mutex mutex;
  static NcclApi api;
  std::lock_guard<std::mutex> lock(mutex);
  if (api.allReduce)
    return api;
  std::string path = requested;
  if (path.empty())
    if (const char *env = std::getenv("GPTRT_NCCL_LIB"); env && *env)
      path = env;
  const bool named = !path.empty();
  if (!named)
    path = "libnccl.so.2";
  void *handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  std::string why = handle ? "" : dlerror();
  if (!handle && !named) {
    // The loader's search missed it: try beside cuBLASLt (a toolkit's
    // lib, or where PyTorch's pip wheels put NVIDIA's libraries).
    std::string tried;
    for (const std::string &candidate :
         ncclPathsBeside(loadedLibraryDir("libcublasLt.so"))) {
      handle = dlopen(candidate.c_str(), RTLD_NOW | RTLD_LOCAL);
      if (handle) {
        path = candidate;
        break;
      }
      tried += ", " + candidate;
    }
    why += tried.empty() ? "" : "; nor from" + tried.substr(1);
  }
  if (!handle)
    throw std::runtime_error(
        "cannot load NCCL from " + path + " (" + why + "): " +
        (named ? "point $GPTRT_NCCL_LIB at libnccl.so.2"
               : "GPU workers need libnccl.so.2 from the CUDA image or the "
                 "nvidia-nccl package; add its directory to LD_LIBRARY_PATH "
                 "or set $GPTRT_NCCL_LIB"));
  NcclApi loaded;
  auto bind = [&](auto &fn, const char *name) {
    fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(dlsym(handle, name));
    if (!fn)
      throw std::runtime_error(path + " has no " + name +
                               ": it is not NCCL 2.x; use the libnccl.so.2 "
                               "of the CUDA image");
  };
  bind(loaded.getUniqueId, "ncclGetUniqueId");
  bind(loaded.commInitRank, "ncclCommInitRank");
  bind(loaded.commAbort, "ncclCommAbort");
  bind(loaded.commDestroy, "ncclCommDestroy");
  bind(loaded.commGetAsyncError, "ncclCommGetAsyncError");
  bind(loaded.getErrorString, "ncclGetErrorString");
  bind(loaded.allReduce, "ncclAllReduce");
  bind(loaded.reduceScatter, "ncclReduceScatter");
  bind(loaded.allGather, "ncclAllGather");
  bind(loaded.broadcast, "ncclBroadcast");
  bind(loaded.send, "ncclSend");
  bind(loaded.recv, "ncclRecv");
  bind(loaded.groupStart, "ncclGroupStart");
  bind(loaded.groupEnd, "ncclGroupEnd");
  api = loaded;
  return api;
}

void checkCuda(cudaError_t status, const char *what) {
  if (status != cudaSuccess)
    throw std::runtime_error(std::string("NCCL communicator: ") + what + ": " +
                             cudaGetErrorName(status) + ": " +
                             cudaGetErrorString(status));
}

class NcclCommunicator final : public Communicator {
public:
  NcclCommunicator(const NcclApi &api, ncclComm_t comm, cudaStream_t stream,
                   int rank, int world, std::chrono::milliseconds timeout)
      : api_(api), comm_(comm), stream_(stream), rank_(rank), world_(world),
        timeout_(timeout) {}

  ~NcclCommunicator() override {
    // Never throws: a communicator that failed was aborted already.
    if (comm_)
      (aborted_ ? api_.commAbort : api_.commDestroy)(comm_);
    if (staging_)
      cudaFree(staging_);
    if (stream_)
      cudaStreamDestroy(stream_);
  }

  int rank() const override { return rank_; }
  int worldSize() const override { return world_; }
  const char *backend() const override { return "nccl"; }

protected:
  void doAllReduceSum(float *data, size_t n) override {
    run("allReduceSum", {data, n, data, n}, [&](const float *in, float *out) {
      return api_.allReduce(in, out, n, ncclFloat32, ncclSum, comm_, stream_);
    });
  }
  // The Communicator promises that a NaN on any rank makes the max NaN;
  // NCCL's max does not say what it does with NaN. So the values travel
  // with NaN replaced by -inf, next to a flag per element (1 for NaN) that
  // is max-reduced too. Small data (amax histories, statistics): the extra
  // host round trip does not matter.
  void doAllReduceMax(float *data, size_t n) override {
    std::vector<float> host(n);
    copyToHost(host.data(), data, n);
    std::vector<float> values(2 * n);
    for (size_t i = 0; i < n; ++i) {
      values[i] = std::isnan(host[i]) ? -INFINITY : host[i];
      values[n + i] = std::isnan(host[i]) ? 1.0f : 0.0f;
    }
    run("allReduceMax", {values.data(), 2 * n, values.data(), 2 * n},
        [&](const float *in, float *out) {
          return api_.allReduce(in, out, 2 * n, ncclFloat32, ncclMax, comm_,
                                stream_);
        });
    for (size_t i = 0; i < n; ++i)
      host[i] = values[n + i] > 0.0f ? NAN : values[i];
    copyFromHost(data, host.data(), n);
  }
  void doReduceScatterSum(const float *send, float *recv, size_t n) override {
    const size_t slice = n / static_cast<size_t>(world_);
    run("reduceScatterSum", {send, n, recv, slice},
        [&](const float *in, float *out) {
          return api_.reduceScatter(in, out, slice, ncclFloat32, ncclSum,
                                    comm_, stream_);
        });
  }
  void doAllGather(const float *send, float *recv, size_t n) override {
    run("allGather", {send, n, recv, n * static_cast<size_t>(world_)},
        [&](const float *in, float *out) {
          return api_.allGather(in, out, n, ncclFloat32, comm_, stream_);
        });
  }
  // NCCL has no all-to-all collective: one send and one receive per peer,
  // grouped so that they progress together.
  void doAllToAll(const float *send, float *recv, size_t n) override {
    const size_t total = n * static_cast<size_t>(world_);
    run("allToAll", {send, total, recv, total},
        [&](const float *in, float *out) {
          ncclResult_t result = api_.groupStart();
          for (int peer = 0; peer < world_ && result == ncclSuccess; ++peer) {
            const size_t at = static_cast<size_t>(peer) * n;
            result = api_.send(in + at, n, ncclFloat32, peer, comm_, stream_);
            if (result == ncclSuccess)
              result =
                  api_.recv(out + at, n, ncclFloat32, peer, comm_, stream_);
          }
          ncclResult_t ended = api_.groupEnd();
          return result != ncclSuccess ? result : ended;
        });
  }
  void doBroadcast(float *data, size_t n, int root) override {
    run("broadcast", {data, n, data, n}, [&](const float *in, float *out) {
      return api_.broadcast(in, out, n, ncclFloat32, root, comm_, stream_);
    });
  }
  void waitForDeviceEvent(void *event) override {
    if (event)
      checkCuda(cudaStreamWaitEvent(stream_, static_cast<cudaEvent_t>(event), 0),
                "cudaStreamWaitEvent");
  }
  void *deviceStream() const override { return stream_; }
  void doBarrier() override {
    float token = 0.0f;
    doAllReduceSum(&token, 1);
  }

private:
  struct Buffers {
    const float *in;
    size_t inCount;
    float *out;
    size_t outCount;
  };

  static bool onDevice(const void *p) {
    cudaPointerAttributes attributes{};
    if (cudaPointerGetAttributes(&attributes, p) != cudaSuccess) {
      cudaGetLastError();  // a plain host pointer on some drivers
      return false;
    }
    return attributes.type == cudaMemoryTypeDevice ||
           attributes.type == cudaMemoryTypeManaged;
  }

  float *stage(size_t count) {
    if (count > stagingCount_) {
      if (staging_)
        checkCuda(cudaFree(staging_), "cudaFree(staging)");
      staging_ = nullptr;
      checkCuda(cudaMalloc(reinterpret_cast<void **>(&staging_),
                           count * sizeof(float)),
                "cudaMalloc(staging)");
      stagingCount_ = count;
    }
    return staging_;
  }

  void copyToHost(float *host, const float *data, size_t n) {
    if (onDevice(data)) {
      checkCuda(cudaMemcpyAsync(host, data, n * sizeof(float),
                                cudaMemcpyDeviceToHost, stream_),
                "cudaMemcpyAsync");
      checkCuda(cudaStreamSynchronize(stream_), "cudaStreamSynchronize");
    } else {
      std::memcpy(host, data, n * sizeof(float));
    }
  }
  void copyFromHost(float *data, const float *host, size_t n) {
    if (onDevice(data)) {
      checkCuda(cudaMemcpyAsync(data, host, n * sizeof(float),
                                cudaMemcpyHostToDevice, stream_),
                "cudaMemcpyAsync");
      checkCuda(cudaStreamSynchronize(stream_), "cudaStreamSynchronize");
    } else {
      std::memcpy(data, host, n * sizeof(float));
    }
  }

  // Runs one collective on device buffers: device arguments are used in
  // place; host ones are copied to a device staging buffer first and the
  // output copied back. In-place host calls (the output inside the input or
  // the other way round, as Communicator allows) are staged as the one host
  // range covering both, so the offsets between them stay the same.
  template <typename Launch>
  void run(const char *op, Buffers b, Launch launch) {
    if (aborted_)
      throw std::runtime_error(std::string("NCCL ") + op +
                               ": the communicator was aborted by an earlier "
                               "failure");
    const bool hostIn = !onDevice(b.in), hostOut = !onDevice(b.out);
    const float *in = b.in;
    float *out = b.out;
    std::less<const float *> before;
    const bool overlap = hostIn && hostOut && before(b.in, b.out + b.outCount) &&
                         before(b.out, b.in + b.inCount);
    if (overlap) {
      const float *lo = std::min(b.in, static_cast<const float *>(b.out), before);
      const float *hi = std::max(b.in + b.inCount,
                                 static_cast<const float *>(b.out + b.outCount), before);
      float *staged = stage(static_cast<size_t>(hi - lo));
      toDevice(staged, lo, static_cast<size_t>(hi - lo));
      in = staged + (b.in - lo);
      out = staged + (b.out - lo);
    } else if (hostIn || hostOut) {
      float *staged = stage((hostIn ? b.inCount : 0) + (hostOut ? b.outCount : 0));
      if (hostIn) {
        toDevice(staged, b.in, b.inCount);
        in = staged;
      }
      if (hostOut)
        out = staged + (hostIn ? b.inCount : 0);
    }
    ncclResult_t result = launch(in, out);
    if (result != ncclSuccess)
      fail(op, api_.getErrorString(result));
    if (hostOut)
      checkCuda(cudaMemcpyAsync(b.out, out, b.outCount * sizeof(float),
                                cudaMemcpyDeviceToHost, stream_),
                "cudaMemcpyAsync");
    wait(op);
  }

  void toDevice(float *device, const float *host, size_t n) {
    checkCuda(cudaMemcpyAsync(device, host, n * sizeof(float),
                              cudaMemcpyHostToDevice, stream_),
              "cudaMemcpyAsync");
  }

  // Polls the stream so a dead peer (NCCL would wait forever) ends in an
  // error after the timeout instead of a hang.
  void wait(const char *op) {
    const auto deadline = std::chrono::steady_clock::now() + timeout_;
    for (;;) {
      cudaError_t status = cudaStreamQuery(stream_);
      if (status == cudaSuccess)
        return;
      if (status != cudaErrorNotReady)
        checkCuda(status, op);
      ncclResult_t async = ncclSuccess;
      api_.commGetAsyncError(comm_, &async);
      if (async != ncclSuccess)
        fail(op, api_.getErrorString(async));
      if (std::chrono::steady_clock::now() > deadline)
        fail(op, ("did not finish within " +
                  std::to_string(timeout_.count() / 1000) +
                  " s: a peer died or stalled (raise --dist-timeout if one "
                  "rank legitimately works that long alone)").c_str());
      std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
  }

  [[noreturn]] void fail(const char *op, const char *why) {
    aborted_ = true;
    api_.commAbort(comm_);
    comm_ = nullptr;
    throw std::runtime_error(std::string("NCCL ") + op + " on rank " +
                             std::to_string(rank_) + " failed: " + why);
  }

  const NcclApi &api_;
  ncclComm_t comm_;
  cudaStream_t stream_;
  int rank_, world_;
  std::chrono::milliseconds timeout_;
  float *staging_ = nullptr;
  size_t stagingCount_ = 0;
  bool aborted_ = false;
};

} // namespace

std::unique_ptr<Communicator> makeNcclCommunicator(Store *store, int rank,
                                                   int worldSize,
                                                   const NcclOptions &options) {
  if (worldSize < 1 || rank < 0 || rank >= worldSize)
    throw std::invalid_argument("NCCL rank " + std::to_string(rank) +
                                " in a world of " + std::to_string(worldSize) +
                                ": expected 0 <= rank < world size");
  if (worldSize > 1 && store == nullptr)
    throw std::invalid_argument("NCCL over " + std::to_string(worldSize) +
                                " ranks needs the rendezvous store");
  const NcclApi &api = loadNccl(options.library);
  int devices = 0;
  cudaError_t status = cudaGetDeviceCount(&devices);
  if (status != cudaSuccess || devices == 0) {
    cudaGetLastError();
    throw std::runtime_error(
        std::string("NCCL needs a CUDA device, found none (cudaGetDeviceCount: ") +
        (status != cudaSuccess ? cudaGetErrorName(status) : "0 devices") +
        "): run GPU workers on a machine with an NVIDIA GPU, or train on the "
        "CPU with --device cpu --procs P");
  }
  // One id per communicator: rank 0 makes it, the others read it.
  static std::atomic<int> made{0};
  const std::string key = "nccl/" + std::to_string(made++) + "/id";
  ncclUniqueId id{};
  if (rank == 0) {
    ncclResult_t result = api.getUniqueId(&id);
    if (result != ncclSuccess)
      throw std::runtime_error(std::string("ncclGetUniqueId failed: ") +
                               api.getErrorString(result));
    if (store)
      store->set(key, std::string(id.internal, sizeof(id.internal)));
  } else {
    std::string bytes = store->get(key, options.timeout);
    if (bytes.size() != sizeof(id.internal))
      throw std::runtime_error("the NCCL id from rank 0 has " +
                               std::to_string(bytes.size()) + " bytes, expected " +
                               std::to_string(sizeof(id.internal)) +
                               ": ranks run different gptrun builds; use one");
    std::memcpy(id.internal, bytes.data(), bytes.size());
  }
  cudaStream_t stream = nullptr;
  checkCuda(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking),
            "cudaStreamCreate");
  ncclComm_t comm = nullptr;
  ncclResult_t result = api.commInitRank(&comm, worldSize, id, rank);
  if (result != ncclSuccess) {
    cudaStreamDestroy(stream);
    throw std::runtime_error("ncclCommInitRank (rank " + std::to_string(rank) +
                             " of " + std::to_string(worldSize) + ") failed: " +
                             api.getErrorString(result) +
                             "; with several GPU workers on one machine each "
                             "needs its own GPU (one per --gpus worker)");
  }
  return std::make_unique<NcclCommunicator>(api, comm, stream, rank, worldSize,
                                            options.timeout);
}

} // namespace gptrt::dist
