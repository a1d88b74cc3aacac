// A loaded gptc artifact: the dlopen'ed .so, its checked manifest and its
// entry points. Loading does every check up front (file, ABI version,
// manifest, symbols) so that problems surface as one clear line before any
// generated code runs.
#ifndef GPTRT_CORE_ARTIFACT_H
#define GPTRT_CORE_ARTIFACT_H

#include "runtime/abi/gptrt.h"
#include "runtime/abi/manifest.pb.h"
#include "runtime/core/ManifestCheck.h"

#include <iterator>
#include <memory>
#include <string>

namespace gptrt {

class Context;

using EntryFn = void (*)(gptrt_context *);

class Artifact {
public:
  // dlopen(RTLD_NOW | RTLD_LOCAL), then checks in order: the gptrt_* symbols
  // are exported by this executable, the file exists and is a loadable .so,
  // gpt_abi_version() == GPTRT_ABI_VERSION, gpt_manifest() parses, its
  // abi_version matches, validateManifest, every declared entry symbol is
  // exported. Throws std::runtime_error with one line naming the file, the
  // value, what was expected and the fix.
  explicit Artifact(const std::string &path);
  ~Artifact();
  Artifact(Artifact &&other) noexcept;
  Artifact &operator=(Artifact &&other) noexcept;
  Artifact(const Artifact &) = delete;
  Artifact &operator=(const Artifact &) = delete;

  const std::string &path() const { return path_; }
  const gptc::manifest::Manifest &manifest() const { return *manifest_; }

  bool hasEntry(EntryKind kind) const;
  // Throws std::runtime_error when the artifact declares no such entry.
  EntryFn entry(EntryKind kind) const;

  // Calls the entry point on ctx (made from this manifest) and throws
  // std::runtime_error if a gptrt_* call inside it recorded an error.
  // Before train_step, eval_step or logits it first runs cast_weights (when
  // the artifact has one) if ctx's weight cache is not current -- the
  // parameters were written since -- or, before train_step, while ctx
  // collects FP8 statistics; optimizer_step outdates the cache.
  void run(EntryKind kind, Context &ctx) const;

private:
  void close();
  void runEntry(EntryKind kind, Context &ctx) const;

  std::string path_;
  void *handle_ = nullptr;
  std::unique_ptr<gptc::manifest::Manifest> manifest_;
  EntryFn entries_[std::size(kAllEntries)] = {};
};

} // namespace gptrt

#endif // GPTRT_CORE_ARTIFACT_H
