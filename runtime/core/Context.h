// The execution context behind the C ABI's opaque `gptrt_context`: the
// device, one allocation per manifest arena, the per-step scalars the
// generated code asks for, and the first error raised inside a gptrt_* call
// (those must never throw through the compiler-generated frames).
#ifndef GPTRT_CORE_CONTEXT_H
#define GPTRT_CORE_CONTEXT_H

#include "runtime/abi/gptrt.h"

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace gptc::manifest {
class Buffer;
class Manifest;
} // namespace gptc::manifest

namespace gptrt {

class Context;
class OptimizerShard;

namespace cuda {
class Device;
} // namespace cuda

} // namespace gptrt

// The C ABI's handle. Its only member points back at the owning Context, so
// the C++ class can keep ordinary members and still be reached from C.
struct gptrt_context {
  gptrt::Context *owner;
};

namespace gptrt {

// Where kernels run. Cuda needs a runtime built with the toolkit
// (runtime/cuda) and a GPU; its arenas live in device memory.
enum class Device { Cpu, Cuda };

const char *deviceName(Device device);
// "cpu" or "cuda"; anything else throws std::runtime_error.
Device parseDevice(std::string_view name);

// Values of `which` in gptrt_step_scalar.
enum class StepScalar : int64_t { LossScale = 0, LearningRate = 1, Step = 2 };

// What one FP8 cast saw while statistics were collected (gptrt_quantize_fp8):
// summed over the micro-steps of the step, amax their maximum, scale the
// last one used.
struct Fp8CastStats {
  float amax = 0;
  float scale = 0;
  int64_t underflow = 0;  // nonzero values whose FP8 code is zero
  int64_t saturated = 0;  // values whose |x * scale| exceeded the format max
  int64_t elements = 0;
};

// Sums buckets of gradients across ranks for gptrt_grad_bucket_ready and
// gptrt_grad_sync. runtime/train implements it over a Communicator, in the
// background, so the backward continues while a bucket travels.
class GradientExchange {
public:
  virtual ~GradientExchange() = default;
  // Starts summing n floats at `grads` (in place) across ranks; sent as
  // f32 (fp8Format -1) or as FP8 codes with a scale shared by all ranks.
  // With `scatter` (ZeRO-1) it reduce-scatters instead: afterwards only
  // this rank's slice of the bucket (bucketSlice in OptimizerShard.h)
  // holds the sums, the rest keeps this rank's own values.
  // `ready` (null on the CPU) is a cudaEvent_t after the kernels that
  // wrote the bucket: the communication waits for it on the device.
  virtual void start(float *grads, int64_t n, int64_t bucket,
                     int64_t fp8Format, bool scatter, void *ready) = 0;
  // Waits for every started bucket; throws std::runtime_error if one failed
  // or if not exactly `buckets` were started this step.
  virtual void finish(int64_t buckets) = 0;
  // ZeRO-1's optimizer step, on the calling thread once finish() returned:
  // the sum of every rank's `local` (the same on every rank), and the
  // parameters (the whole f32 params arena) with every rank's owned
  // elements copied from that rank.
  virtual double sumOverRanks(double local) = 0;
  virtual void gatherParams(float *params, const OptimizerShard &shard) = 0;
};

// One arena to allocate. alignment 0 means the default (64 bytes).
struct ArenaSpec {
  std::string name;
  uint64_t size = 0;
  uint64_t alignment = 0;
  // Holds the parameters: a mutable arenaBase() of it outdates the weight
  // cache (weightCacheCurrent).
  bool params = false;
};

constexpr uint64_t kDefaultArenaAlignment = 64;

class Context {
public:
  // Allocates every arena zero-filled, aligned to max(64, its alignment);
  // on Device::Cuda with cudaMalloc (256-byte aligned) on GPU 0. Throws
  // std::runtime_error for a bad alignment, a failed allocation, or Cuda
  // without a GPU ("no CUDA device found (cudaGetDeviceCount: ...)") or
  // without the backend built in.
  Context(Device device, const std::vector<ArenaSpec> &arenas);
  // The arenas of a manifest, in its order. On Cuda it also refuses an FP8
  // artifact (precision "fp8...") on a GPU below compute capability 8.9,
  // naming the capability found.
  explicit Context(const gptc::manifest::Manifest &manifest,
                   Device device = Device::Cpu);
  ~Context();
  Context(const Context &) = delete;
  Context &operator=(const Context &) = delete;

  Device device() const { return device_; }

  // The pointer handed to generated code, and the way back from it.
  gptrt_context *handle() { return &handle_; }
  static Context &fromHandle(gptrt_context *handle) { return *handle->owner; }

  size_t numArenas() const { return arenas_.size(); }
  // Arena addresses are device pointers on Cuda: host code must move data
  // with copyIn/copyOut below, never dereference them.
  // Throw std::out_of_range naming the index and the arena count.
  // The mutable forms of arenaBase and data outdate the weight cache when
  // they reach the parameters' arena.
  void *arenaBase(size_t index);
  const void *arenaBase(size_t index) const;
  uint64_t arenaSize(size_t index) const;
  const std::string &arenaName(size_t index) const;
  void zeroArena(size_t index);
  // True when the arenas have the manifest's count and sizes (a context made
  // for another artifact would let generated code write out of bounds).
  bool matches(const gptc::manifest::Manifest &manifest) const;

  // Start of a manifest buffer: arena base + offset. Throws std::out_of_range
  // when the arena index or the buffer's extent is out of range.
  void *data(const gptc::manifest::Buffer &buffer);
  const void *data(const gptc::manifest::Buffer &buffer) const;

  // Whether the WEIGHT_CACHE arena (rt-cache-weight-casts) holds the casts
  // of the current parameters. False at first and after any mutable access
  // to the parameters' arena; Artifact::run sets it after cast_weights and
  // clears it before optimizer_step (which writes the parameters from
  // generated code, through gptrt_arena_base, which does not clear it).
  bool weightCacheCurrent() const { return weightCacheCurrent_; }
  void setWeightCacheCurrent(bool current) { weightCacheCurrent_ = current; }

  // The scalars gptrt_step_scalar hands out, set by the runner before each
  // entry call. Defaults: loss scale 1, learning rate 0, step 0 (AdamW then
  // reports that no step was set).
  // On Cuda each setter also uploads the scalars to the device (see
  // cuda::Device::uploadStepScalars); never call them inside an entry.
  void setLossScale(float scale);
  void setLearningRate(float lr);
  // step >= 1 and at most 2^24 (it travels as an exact f32); else throws.
  void setStep(int64_t step);
  float lossScale() const { return lossScale_; }
  float learningRate() const { return learningRate_; }
  int64_t step() const { return step_; }
  // gptrt_step_scalar's value for `which`; throws std::out_of_range.
  float stepScalar(int64_t which) const;

  // Errors raised inside gptrt_* calls. The first one is kept and every later
  // kernel call becomes a no-op until it is cleared, so one bad value does
  // not cascade into garbage; the runner turns it into an exception after the
  // entry point returns (Artifact::run).
  void recordError(std::string message);
  bool failed() const { return !error_.empty(); }
  const std::string &error() const { return error_; }
  void clearError() { error_.clear(); }
  // Throws std::runtime_error("<during>: <error>") and clears the error.
  void throwIfFailed(const std::string &during);

  // Data parallelism: the exchange the compiled step's gradient buckets go
  // through (null: one rank, the kernels do nothing), and whether this
  // train_step call is the last micro-step before the optimizer step.
  void setGradientExchange(GradientExchange *exchange) { exchange_ = exchange; }
  GradientExchange *gradientExchange() const { return exchange_; }
  void setLastMicroStep(bool last) { lastMicroStep_ = last; }
  bool lastMicroStep() const { return lastMicroStep_; }

  // ZeRO-1: replaces arena `index` (the optimizer's, unsharded: every
  // gradient element's m, then v) by this rank's shard of it, keeping the
  // moments the rank owns. Done once, after a checkpoint is restored; the
  // sharded kernels then place moments through optimizerShard() (null:
  // not sharded, one rank owns everything).
  void shardOptimizer(const OptimizerShard &shard, size_t index);
  const OptimizerShard *optimizerShard() const { return shard_.get(); }
  size_t optimizerShardArena() const { return shardArena_; }

  // FP8 statistics: between begin and end, quantize_fp8 calls with a stat
  // slot record into fp8Stats()[slot] (`slots` entries, cleared by begin);
  // otherwise they skip the extra work.
  // On Cuda the device counts (cuda::Device::recordCastStats) and end
  // copies its counts into fp8Stats() (a synchronisation).
  void beginFp8Stats(size_t slots);
  void endFp8Stats();
  bool collectingFp8Stats() const { return collectFp8Stats_; }
  std::vector<Fp8CastStats> &fp8Stats() { return fp8Stats_; }

  // Per-call timing (gptrun --profile-step): between begin and end, every
  // outermost gptrt_* call -- one the generated code makes, not those a
  // fused CPU kernel makes inside it -- is timed, on Cpu by the host
  // clock, on Cuda by events recorded around it on the stream (its
  // kernels' time while the GPU is busy, plus any wait for the host); end
  // synchronises and returns the calls in order. Entry points run eagerly
  // meanwhile: a graph replay has no calls to time.
  struct ProfiledCall {
    const char *name; // the gptrt_* function (a string literal)
    double ms;
  };
  void beginProfile();
  std::vector<ProfiledCall> endProfile();
  bool profiling() const { return profiling_; }
  // The gptrt_* dispatcher's hooks around each call while profiling.
  void enterProfiledCall(const char *name);
  void leaveProfiledCall();

  // Per-context scratch for kernels that need a temporary (grown, never
  // shrunk; contents unspecified). `slot` picks one of kScratchSlots such
  // buffers, for a temporary held while a nested call uses another; 0 is
  // the general one.
  static constexpr unsigned kScratchSlots = 8;
  float *scratch(size_t count, unsigned slot = 0);

  // --- host <-> arena copies (the same on every device) ------------------
  // dst/src inside an arena (from data() or arenaBase()); the other side is
  // host memory. A memcpy on Cpu; a synchronous copy on Cuda.
  void copyIn(void *arenaDst, const void *hostSrc, size_t bytes);
  void copyOut(void *hostDst, const void *arenaSrc, size_t bytes) const;
  // Waits for queued device work; throws its first error (no-op on Cpu).
  void synchronize();
  // The CUDA backend of a Cuda context, null on Cpu.
  cuda::Device *cudaDevice() const { return cuda_.get(); }

  // CUDA graphs (Artifact::run on Cuda; ignored on Cpu): off by default.
  // Each entry point gets one graph per value of lastMicroStep(), captured
  // on its second call (the first, run eagerly, sizes the scratch buffer
  // and the GEMM plans) and replayed from then on.
  void setCudaGraphs(bool on) { cudaGraphs_ = on; }
  bool cudaGraphs() const { return cudaGraphs_ && cuda_ != nullptr; }
  // The graph slot of (entry function, lastMicroStep), and how many times
  // that combination ran before its graph existed.
  int graphSlot(const void *entry, bool lastMicroStep);
  int64_t &eagerRuns(int slot) { return eagerRuns_.at(static_cast<size_t>(slot)); }

private:
  struct Arena {
    std::string name;
    uint64_t size = 0;
    uint64_t alignment = 0;
    std::unique_ptr<void, void (*)(void *)> base{nullptr, nullptr};
  };
  // Zero-filled, on this context's device.
  Arena allocate(const ArenaSpec &spec);

  Device device_;
  // Declared before arenas_ so that it outlives them (their deleter frees
  // device memory).
  std::unique_ptr<cuda::Device> cuda_;
  gptrt_context handle_;
  std::vector<Arena> arenas_;
  float lossScale_ = 1.0f;
  float learningRate_ = 0.0f;
  int64_t step_ = 0;
  std::string error_;
  std::vector<float> scratch_[kScratchSlots];
  bool collectFp8Stats_ = false;
  GradientExchange *exchange_ = nullptr;
  std::unique_ptr<OptimizerShard> shard_;
  size_t shardArena_ = 0;
  bool cudaGraphs_ = false;
  std::vector<std::pair<const void *, bool>> graphKeys_;
  std::vector<int64_t> eagerRuns_;
  void uploadStepScalars();
  bool lastMicroStep_ = true;
  std::vector<Fp8CastStats> fp8Stats_;
  bool profiling_ = false;
  int profileDepth_ = 0;
  // Outermost calls: name, and host start/end in ms (Cpu; on Cuda the
  // events below).
  struct OpenCall {
    const char *name;
    double start = 0, end = 0;
  };
  std::vector<OpenCall> profiled_;
  // Cuda: events 2i and 2i + 1 around outermost call i, reused by later
  // profiles.
  std::vector<void *> profileEvents_;
  void recordProfileEvent(size_t index);
  size_t paramsArena_ = SIZE_MAX;
  bool weightCacheCurrent_ = false;
};

} // namespace gptrt

#endif // GPTRT_CORE_CONTEXT_H
