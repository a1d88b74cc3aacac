// Artifact loading: dlopen, ABI version handshake, manifest parse and
// validation, entry point resolution.
#include "runtime/core/Artifact.h"

#include "runtime/abi/ElfCheck.h"
#include "runtime/abi/ManifestSection.h"
#include "runtime/core/Abi.h"
#include "runtime/core/Context.h"
#include "runtime/cuda/Backend.h"

#include <dlfcn.h>
#include <sys/stat.h>

#include <stdexcept>
#include <utility>

namespace gptrt {

namespace mf = gptc::manifest;

namespace {

using AbiVersionFn = uint32_t (*)();
using ManifestFn = const uint8_t *(*)(uint64_t *);

size_t slot(EntryKind kind) { return static_cast<size_t>(kind); }

std::string dlerrorText() {
  const char *e = dlerror();
  return e ? e : "unknown dlopen error";
}

} // namespace

Artifact::Artifact(const std::string &path) : path_(path) {
  const std::string name = "artifact " + path;
  // Before dlopen: with RTLD_NOW an unexported runtime makes dlopen fail
  // with a bare "undefined symbol", and this message says how to fix it.
  checkAbiExported();

  struct stat st;
  if (stat(path.c_str(), &st) != 0)
    throw std::runtime_error(name + " does not exist: check the path (a .so "
                                    "written by gptc -o)");
  if (!S_ISREG(st.st_mode))
    throw std::runtime_error(name + " is not a regular file, expected a .so "
                                    "written by gptc: pass the artifact file");
  // dlopen maps a truncated file and the first touch of a missing page is a
  // SIGBUS with nothing on stderr.
  if (std::optional<std::string> problem = elfSharedObjectProblem(path))
    throw std::runtime_error(name + " cannot be loaded: " + *problem +
                             "; rebuild it with gptc -o FILE.so");
  // Nor is any of it run (dlopen runs initialisers) before its manifest is
  // known to be whole and as gptc wrote it.
  if (std::optional<std::string> problem = manifest_section::problem(path))
    throw std::runtime_error(name + " cannot be loaded: " + *problem +
                             "; rebuild it with gptc -o FILE.so");
  // A name without '/' would make dlopen search the library path instead.
  const std::string openPath =
      path.find('/') == std::string::npos ? "./" + path : path;
  dlerror();
  handle_ = dlopen(openPath.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle_ == nullptr) {
    const std::string err = dlerrorText();
    if (err.find("undefined symbol: gptrt_") != std::string::npos)
      throw std::runtime_error(name + " needs a runtime function this "
                                      "runtime lacks (" + err +
                               "): rebuild it with the gptc that matches "
                               "this runtime");
    throw std::runtime_error(name + " cannot be loaded (" + err +
                             "), expected a shared object built by gptc: "
                             "rebuild it with gptc -o FILE.so");
  }
  try {
    auto abiVersion =
        reinterpret_cast<AbiVersionFn>(dlsym(handle_, "gpt_abi_version"));
    auto manifestFn =
        reinterpret_cast<ManifestFn>(dlsym(handle_, "gpt_manifest"));
    if (abiVersion == nullptr || manifestFn == nullptr)
      throw std::runtime_error(
          name + " does not export " +
          (abiVersion == nullptr ? "gpt_abi_version" : "gpt_manifest") +
          ", expected a gptc artifact: rebuild it with gptc");
    const uint32_t version = abiVersion();
    if (version != GPTRT_ABI_VERSION)
      throw std::runtime_error(
          name + " was built for runtime ABI " + std::to_string(version) +
          ", this runtime speaks " + std::to_string(GPTRT_ABI_VERSION) +
          ": rebuild it with the gptc that matches this runtime");

    uint64_t size = 0;
    const uint8_t *bytes = manifestFn(&size);
    manifest_ = std::make_unique<mf::Manifest>();
    if (bytes == nullptr || size > static_cast<uint64_t>(INT32_MAX) ||
        !manifest_->ParseFromArray(bytes, static_cast<int>(size)))
      throw std::runtime_error(
          name + ": its manifest (" + std::to_string(size) +
          " bytes) does not parse as gptc.manifest.Manifest: rebuild it with "
          "the gptc that matches this runtime");
    if (manifest_->abi_version() != GPTRT_ABI_VERSION)
      throw std::runtime_error(
          name + ": its manifest says runtime ABI " +
          std::to_string(manifest_->abi_version()) +
          " while gpt_abi_version() says " + std::to_string(version) +
          ", expected both " + std::to_string(GPTRT_ABI_VERSION) +
          ": rebuild it with a fixed gptc");
    validateManifest(*manifest_, name);

    for (EntryKind kind : kAllEntries) {
      const mf::Entry &spec = entrySpec(*manifest_, kind);
      if (spec.symbol().empty())
        continue;
      void *fn = dlsym(handle_, spec.symbol().c_str());
      if (fn == nullptr)
        throw std::runtime_error(name + " declares entry " + entryName(kind) +
                                 " = '" + spec.symbol() +
                                 "' but does not export that symbol: rebuild "
                                 "it with a fixed gptc");
      entries_[slot(kind)] = reinterpret_cast<EntryFn>(fn);
    }
  } catch (...) {
    close();
    throw;
  }
}

Artifact::~Artifact() { close(); }

Artifact::Artifact(Artifact &&other) noexcept
    : path_(std::move(other.path_)), handle_(std::exchange(other.handle_, nullptr)),
      manifest_(std::move(other.manifest_)) {
  for (size_t i = 0; i < std::size(entries_); ++i)
    entries_[i] = std::exchange(other.entries_[i], nullptr);
}

Artifact &Artifact::operator=(Artifact &&other) noexcept {
  if (this != &other) {
    close();
    path_ = std::move(other.path_);
    handle_ = std::exchange(other.handle_, nullptr);
    manifest_ = std::move(other.manifest_);
    for (size_t i = 0; i < std::size(entries_); ++i)
      entries_[i] = std::exchange(other.entries_[i], nullptr);
  }
  return *this;
}

void Artifact::close() {
  if (handle_ != nullptr)
    dlclose(handle_);
  handle_ = nullptr;
  for (EntryFn &e : entries_)
    e = nullptr;
}

bool Artifact::hasEntry(EntryKind kind) const {
  return entries_[slot(kind)] != nullptr;
}

EntryFn Artifact::entry(EntryKind kind) const {
  EntryFn fn = entries_[slot(kind)];
  if (fn == nullptr)
    throw std::runtime_error("artifact " + path_ + " has no " +
                             entryName(kind) +
                             " entry, expected one to run it: compile the "
                             "model with a gptc pipeline that emits it");
  return fn;
}

void Artifact::run(EntryKind kind, Context &ctx) const {
  const bool readsCache = kind == EntryKind::TrainStep ||
                          kind == EntryKind::EvalStep ||
                          kind == EntryKind::Logits;
  // The weights' casts fill FP8 statistics slots: a collecting train_step
  // counts them as it did when train_step made them itself.
  if (readsCache && hasEntry(EntryKind::CastWeights) &&
      (!ctx.weightCacheCurrent() ||
       (kind == EntryKind::TrainStep && ctx.collectingFp8Stats())))
    run(EntryKind::CastWeights, ctx);
  if (kind == EntryKind::OptimizerStep)
    ctx.setWeightCacheCurrent(false);
  runEntry(kind, ctx);
  if (kind == EntryKind::CastWeights)
    ctx.setWeightCacheCurrent(true);
}

void Artifact::runEntry(EntryKind kind, Context &ctx) const {
  EntryFn fn = entry(kind);
  if (!ctx.matches(*manifest_))
    throw std::runtime_error(
        "the context given to " + std::string(entryName(kind)) +
        " of artifact " + path_ +
        " has other arenas than its manifest, expected a Context made from "
        "this artifact's manifest: create one with Context(artifact.manifest())");
  // An error left by direct gptrt_* calls would silently disable this run.
  ctx.throwIfFailed("before " + std::string(entryName(kind)) + " of artifact " +
                    path_);
  // A graph replays the kernels a call enqueued, so it only stands for
  // calls whose host-side decisions are the same: none while gradients are
  // exchanged (the exchange waits and hands buckets over), FP8
  // statistics are collected or calls are timed (--profile-step).
  if (ctx.cudaGraphs() && !ctx.gradientExchange() &&
      !ctx.collectingFp8Stats() && !ctx.profiling()) {
    cuda::Device &gpu = *ctx.cudaDevice();
    const int slot = ctx.graphSlot(reinterpret_cast<const void *>(fn),
                                   ctx.lastMicroStep());
    if (!gpu.hasGraph(slot) && ctx.eagerRuns(slot)++ == 0) {
      fn(ctx.handle());  // warm-up: sizes scratch, makes the GEMM plans
    } else {
      // A failed gptrt_* call records its error rather than throwing, and
      // the calls after it return at once: thrown inside the capture, the
      // error makes captureGraph abandon the partial graph, never keep it.
      if (!gpu.hasGraph(slot))
        gpu.captureGraph(slot, [&] {
          fn(ctx.handle());
          ctx.throwIfFailed(std::string(entryName(kind)) + " of artifact " +
                            path_ + " (capturing its CUDA graph)");
        });
      gpu.launchGraph(slot);
    }
  } else {
    fn(ctx.handle());
  }
  ctx.throwIfFailed(std::string(entryName(kind)) + " of artifact " + path_);
  // On CUDA the kernels ran asynchronously: a fault in one surfaces here,
  // attributed to this entry (a no-op on the CPU).
  try {
    ctx.synchronize();
  } catch (const std::exception &e) {
    throw std::runtime_error(std::string(entryName(kind)) + " of artifact " +
                             path_ + ": " + e.what());
  }
}

} // namespace gptrt
