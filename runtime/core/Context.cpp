// Context: arena allocation, step scalars and the sticky kernel error.
#include "runtime/core/Context.h"

#include "runtime/abi/manifest.pb.h"
#include "runtime/core/ManifestCheck.h"
#include "runtime/core/OptimizerShard.h"
#include "runtime/cuda/Backend.h"

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <utility>

namespace gptrt {

const char *deviceName(Device device) {
  switch (device) {
  case Device::Cpu:
    return "cpu";
  case Device::Cuda:
    return "cuda";
  }
  return "?";
}

Device parseDevice(std::string_view name) {
  if (name == "cpu")
    return Device::Cpu;
  if (name == "cuda")
    return Device::Cuda;
  throw std::runtime_error("device '" + std::string(name) +
                           "' is unknown, expected 'cpu' or 'cuda': pass "
                           "--device cpu or --device cuda");
}

namespace {

std::vector<ArenaSpec> arenaSpecs(const gptc::manifest::Manifest &manifest) {
  std::vector<ArenaSpec> specs;
  for (const auto &a : manifest.arenas())
    specs.push_back({a.name(), a.size(), a.alignment(),
                     a.kind() == gptc::manifest::PARAMS});
  return specs;
}

} // namespace

Context::Context(Device device, const std::vector<ArenaSpec> &arenas)
    : device_(device), handle_{this} {
  // Throws the one-line reason when there is no GPU or no backend.
  if (device == Device::Cuda)
    cuda_ = cuda::openDevice();
  for (const ArenaSpec &spec : arenas) {
    if (spec.params)
      paramsArena_ = arenas_.size();
    arenas_.push_back(allocate(spec));
  }
}

Context::Arena Context::allocate(const ArenaSpec &spec) {
  uint64_t align = spec.alignment == 0 ? kDefaultArenaAlignment
                                       : spec.alignment;
  Arena arena;
  arena.name = spec.name;
  arena.size = spec.size;
  arena.alignment = spec.alignment;
  if (cuda_) {
    // cudaMalloc returns 256-byte aligned memory.
    if ((align & (align - 1)) != 0 || align > 256)
      throw std::runtime_error("arena '" + spec.name + "' has alignment " +
                               std::to_string(align) +
                               ", expected a power of two up to 256 on "
                               "CUDA: rebuild the artifact with a fixed "
                               "gptc");
    arena.base = std::unique_ptr<void, void (*)(void *)>(
        cuda_->allocZeroed(spec.size, "arena '" + spec.name + "'"),
        cuda_->freeFunction());
    return arena;
  }
  if ((align & (align - 1)) != 0)
    throw std::runtime_error("arena '" + spec.name + "' has alignment " +
                             std::to_string(align) +
                             ", expected a power of two: rebuild the "
                             "artifact with a fixed gptc");
  if (align < kDefaultArenaAlignment)
    align = kDefaultArenaAlignment;
  // aligned_alloc wants a multiple of the alignment, and a zero-size arena
  // still gets a distinct, valid base address.
  uint64_t bytes = (spec.size + align - 1) / align * align;
  if (bytes == 0)
    bytes = align;
  void *p = std::aligned_alloc(align, bytes);
  if (p == nullptr)
    throw std::runtime_error("cannot allocate arena '" + spec.name + "' of " +
                             std::to_string(spec.size) +
                             " bytes: free memory or use a smaller batch");
  std::memset(p, 0, bytes);
  arena.base = std::unique_ptr<void, void (*)(void *)>(p, std::free);
  return arena;
}

void Context::shardOptimizer(const OptimizerShard &shard, size_t index) {
  if (shard_)
    throw std::logic_error("the optimizer arena is already sharded");
  Arena &old = arenas_.at(index);
  const uint64_t fullBytes = 2 * static_cast<uint64_t>(shard.gradElements()) * 4;
  if (old.size < fullBytes)
    throw std::runtime_error(
        "arena '" + old.name + "' has " + std::to_string(old.size) +
        " bytes, expected at least " + std::to_string(fullBytes) +
        " (two moments per gradient element) to shard it for ZeRO-1: "
        "rebuild the artifact with this gptc");
  std::vector<float> full(2 * static_cast<size_t>(shard.gradElements()));
  copyOut(full.data(), old.base.get(), fullBytes);
  std::vector<float> mine(2 * static_cast<size_t>(shard.localElements()));
  shard.extract(full.data(), mine.data());
  full = {};
  Arena sharded = allocate({old.name, shard.optimizerBytes(), old.alignment});
  copyIn(sharded.base.get(), mine.data(), mine.size() * sizeof(float));
  // The whole-model moments are freed here: that is ZeRO-1's saving.
  old = std::move(sharded);
  shard_ = std::make_unique<OptimizerShard>(shard);
  shardArena_ = index;
}

namespace {

// FP8 GEMMs need Ada (8.9) or Hopper (9.0) tensor cores. Checked before any
// arena is allocated, so the user gets this line and not an obscure
// cuBLASLt error at the first FP8 GEMM.
void checkFp8Capable(const gptc::manifest::Manifest &manifest, Device device) {
  if (device != Device::Cuda || manifest.precision().rfind("fp8", 0) != 0)
    return;
  std::unique_ptr<cuda::Device> gpu = cuda::openDevice();
  if (gpu->computeCapability() < 89)
    throw std::runtime_error(
        "artifact precision '" + manifest.precision() + "' needs FP8 tensor "
        "cores, compute capability 8.9 or higher; found " +
        gpu->description() +
        ": use a bf16 artifact on this GPU, or an Ada/Hopper GPU");
}

std::vector<ArenaSpec> checkedSpecs(const gptc::manifest::Manifest &manifest,
                                    Device device) {
  checkFp8Capable(manifest, device);
  return arenaSpecs(manifest);
}

} // namespace

Context::Context(const gptc::manifest::Manifest &manifest, Device device)
    : Context(device, checkedSpecs(manifest, device)) {}

Context::~Context() {
  // Arenas and events first: they need the device still open.
  arenas_.clear();
  for (void *event : profileEvents_)
    cuda_->deleteTimingEvent(event);
}

void *Context::arenaBase(size_t index) {
  if (index == paramsArena_)
    weightCacheCurrent_ = false;
  return const_cast<void *>(std::as_const(*this).arenaBase(index));
}

const void *Context::arenaBase(size_t index) const {
  if (index >= arenas_.size())
    throw std::out_of_range("arena index " + std::to_string(index) +
                            " is out of range, expected < " +
                            std::to_string(arenas_.size()) +
                            " (the manifest's arena count)");
  return arenas_[index].base.get();
}

uint64_t Context::arenaSize(size_t index) const {
  arenaBase(index);
  return arenas_[index].size;
}

const std::string &Context::arenaName(size_t index) const {
  arenaBase(index);
  return arenas_[index].name;
}

void Context::zeroArena(size_t index) {
  if (cuda_) {
    cuda_->zero(arenaBase(index), arenas_[index].size);
    return;
  }
  std::memset(arenaBase(index), 0, arenas_[index].size);
}

bool Context::matches(const gptc::manifest::Manifest &manifest) const {
  if (static_cast<size_t>(manifest.arenas_size()) != arenas_.size())
    return false;
  for (size_t i = 0; i < arenas_.size(); ++i) {
    uint64_t expected = manifest.arenas(static_cast<int>(i)).size();
    if (shard_ && i == shardArena_)
      expected = shard_->optimizerBytes();
    if (expected != arenas_[i].size)
      return false;
  }
  return true;
}

const void *Context::data(const gptc::manifest::Buffer &buffer) const {
  const size_t index = buffer.arena();
  const char *base = static_cast<const char *>(arenaBase(index));
  const uint64_t end = buffer.offset() + bufferBytes(buffer);
  if (end < buffer.offset() || end > arenas_[index].size)
    throw std::out_of_range(
        "buffer at offset " + std::to_string(buffer.offset()) + " ends at " +
        std::to_string(end) + ", past arena '" + arenas_[index].name +
        "' of " + std::to_string(arenas_[index].size) +
        " bytes: the context was made for another manifest");
  return base + buffer.offset();
}

void *Context::data(const gptc::manifest::Buffer &buffer) {
  if (buffer.arena() == paramsArena_)
    weightCacheCurrent_ = false;
  return const_cast<void *>(std::as_const(*this).data(buffer));
}

void Context::setLossScale(float scale) {
  lossScale_ = scale;
  uploadStepScalars();
}

void Context::setLearningRate(float lr) {
  learningRate_ = lr;
  uploadStepScalars();
}

void Context::uploadStepScalars() {
  if (cuda_)
    cuda_->uploadStepScalars(lossScale_, learningRate_,
                             static_cast<float>(step_));
}

void Context::beginFp8Stats(size_t slots) {
  fp8Stats_.assign(slots, Fp8CastStats{});
  if (cuda_)
    cuda_->beginCastStats(slots);
  collectFp8Stats_ = true;
}

void Context::endFp8Stats() {
  if (cuda_ && collectFp8Stats_) {
    std::vector<cuda::CastStats> counted;
    cuda_->endCastStats(counted);
    for (size_t i = 0; i < counted.size() && i < fp8Stats_.size(); ++i) {
      Fp8CastStats &s = fp8Stats_[i];
      s.amax = counted[i].amax;
      s.scale = counted[i].scale;
      s.underflow = counted[i].underflow;
      s.saturated = counted[i].saturated;
      s.elements = counted[i].elements;
    }
  }
  collectFp8Stats_ = false;
}

int Context::graphSlot(const void *entry, bool lastMicroStep) {
  std::pair<const void *, bool> key{entry, lastMicroStep};
  for (size_t i = 0; i < graphKeys_.size(); ++i)
    if (graphKeys_[i] == key)
      return static_cast<int>(i);
  graphKeys_.push_back(key);
  eagerRuns_.push_back(0);
  return static_cast<int>(graphKeys_.size() - 1);
}

void Context::setStep(int64_t step) {
  // Above 2^24 consecutive integers are no longer all representable in f32.
  constexpr int64_t kMaxExact = int64_t(1) << 24;
  if (step < 1 || step > kMaxExact)
    throw std::out_of_range("optimizer step " + std::to_string(step) +
                            " is out of range, expected 1.." +
                            std::to_string(kMaxExact) +
                            " (steps are 1-based and passed as exact f32)");
  step_ = step;
  uploadStepScalars();
}

float Context::stepScalar(int64_t which) const {
  switch (static_cast<StepScalar>(which)) {
  case StepScalar::LossScale:
    return lossScale_;
  case StepScalar::LearningRate:
    return learningRate_;
  case StepScalar::Step:
    return static_cast<float>(step_);
  }
  throw std::out_of_range("step scalar " + std::to_string(which) +
                          " is unknown, expected 0 (loss scale), 1 (learning "
                          "rate) or 2 (step): rebuild the artifact with a "
                          "gptc of this ABI");
}

void Context::recordError(std::string message) {
  if (error_.empty())
    error_ = message.empty() ? std::string("unknown error") : std::move(message);
}

void Context::throwIfFailed(const std::string &during) {
  if (error_.empty())
    return;
  std::string message = during + ": " + error_;
  error_.clear();
  throw std::runtime_error(message);
}

void Context::copyIn(void *arenaDst, const void *hostSrc, size_t bytes) {
  if (cuda_)
    cuda_->toDevice(arenaDst, hostSrc, bytes);
  else if (bytes > 0)
    std::memcpy(arenaDst, hostSrc, bytes);
}

void Context::copyOut(void *hostDst, const void *arenaSrc,
                      size_t bytes) const {
  if (cuda_)
    cuda_->toHost(hostDst, arenaSrc, bytes);
  else if (bytes > 0)
    std::memcpy(hostDst, arenaSrc, bytes);
}

void Context::beginProfile() {
  profiled_.clear();
  profileDepth_ = 0;
  profiling_ = true;
}

namespace {
double hostMillis() {
  return std::chrono::duration<double, std::milli>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}
} // namespace

void Context::recordProfileEvent(size_t index) {
  while (profileEvents_.size() <= index)
    profileEvents_.push_back(cuda_->newTimingEvent());
  cuda_->recordTimingEvent(profileEvents_[index], nullptr);
}

void Context::enterProfiledCall(const char *name) {
  if (profileDepth_++ != 0)
    return;
  OpenCall call{name};
  if (cuda_)
    recordProfileEvent(2 * profiled_.size());
  else
    call.start = hostMillis();
  profiled_.push_back(call);
}

void Context::leaveProfiledCall() {
  if (--profileDepth_ != 0 || profiled_.empty())
    return;
  if (cuda_)
    recordProfileEvent(2 * profiled_.size() - 1);
  else
    profiled_.back().end = hostMillis();
}

std::vector<Context::ProfiledCall> Context::endProfile() {
  profiling_ = false;
  std::vector<ProfiledCall> calls;
  calls.reserve(profiled_.size());
  for (size_t i = 0; i < profiled_.size(); ++i) {
    const OpenCall &c = profiled_[i];
    calls.push_back(
        {c.name, cuda_ ? 1e3 * cuda_->secondsBetween(profileEvents_[2 * i],
                                                     profileEvents_[2 * i + 1])
                       : c.end - c.start});
  }
  profiled_.clear();
  return calls;
}

void Context::synchronize() {
  if (cuda_)
    cuda_->synchronize();
}

float *Context::scratch(size_t count, unsigned slot) {
  if (slot >= kScratchSlots)
    throw std::logic_error("scratch slot " + std::to_string(slot) +
                           ", expected < " + std::to_string(kScratchSlots));
  std::vector<float> &buffer = scratch_[slot];
  if (buffer.size() < count)
    buffer.resize(count);
  return buffer.data();
}

} // namespace gptrt
