// Plugin loading (see PluginLoader.h).
#include "compiler/precision/PluginLoader.h"

#include "compiler/precision/PluginApi.h"
#include "runtime/abi/ElfCheck.h"

#include "llvm/Support/FileSystem.h"

#include <dlfcn.h>

namespace gptc {

namespace {

llvm::Error failure(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

/// dlerror() without the "PATH: " it starts with, since our message names
/// the file already.
std::string loaderMessage(llvm::StringRef path) {
  const char *raw = dlerror();
  llvm::StringRef message = raw ? raw : "unknown error";
  message.consume_front(path);
  message.consume_front(": ");
  return message.str();
}

} // namespace

llvm::Error loadPrecisionPlugin(llvm::StringRef path,
                                PolicyRegistry &registry) {
  std::string quoted = "precision plugin '" + path.str() + "'";
  if (!llvm::sys::fs::exists(path))
    return failure("cannot load " + quoted +
                   ": no such file; pass the path of a plugin .so built "
                   "against gptc's install (docs/writing-a-precision-policy.md)");
  // A truncated file would be mapped by dlopen and crash on first touch.
  if (std::optional<std::string> problem =
          gptrt::elfSharedObjectProblem(path.str()))
    return failure("cannot load " + quoted + ": " + *problem +
                   "; rebuild the plugin against gptc's install "
                   "(docs/writing-a-precision-policy.md)");
  // RTLD_NOW: a plugin whose symbols do not resolve against this gptc (an
  // older libGptcPrecision, a missing library) fails here with the name of
  // the symbol, not later in the middle of a compilation. Never closed: the
  // registry keeps pointers into its code.
  void *handle = dlopen(path.str().c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle)
    return failure("cannot load " + quoted + ": " + loaderMessage(path) +
                   "; expected a shared library built against gptc's install "
                   "(docs/writing-a-precision-policy.md)");
  using EntryPoint = const GptcPrecisionPluginInfo *(*)();
  auto entry = reinterpret_cast<EntryPoint>(
      dlsym(handle, GPTC_PRECISION_PLUGIN_ENTRY));
  if (!entry)
    return failure("'" + path + "' is not a gptc precision plugin: it does "
                   "not export " GPTC_PRECISION_PLUGIN_ENTRY
                   "(); define it as docs/writing-a-precision-policy.md shows");
  const GptcPrecisionPluginInfo *info = entry();
  if (!info)
    return failure("'" + path + "' is not a gptc precision plugin: " +
                   GPTC_PRECISION_PLUGIN_ENTRY + "() returned null");
  if (info->apiVersion != GPTC_PRECISION_PLUGIN_API_VERSION)
    return failure(quoted + " was built for precision plugin API version " +
                   llvm::Twine(info->apiVersion) + ", this gptc expects " +
                   "version " + llvm::Twine(GPTC_PRECISION_PLUGIN_API_VERSION) +
                   ": rebuild the plugin against this gptc's install");
  if (!info->registerPolicies)
    return failure(quoted + " has no registerPolicies function: set it in "
                   "the GptcPrecisionPluginInfo it returns");

  // The plugin fills a registry of its own first, so a name it shares with
  // a policy gptc already has is reported instead of silently dropped.
  PolicyRegistry fromPlugin;
  info->registerPolicies(&fromPlugin);
  if (fromPlugin.entries().empty())
    return failure(quoted + " registered no policy: call registry->add(name, "
                   "summary, factory) in its registerPolicies");
  for (const PolicyEntry &entry : fromPlugin.entries()) {
    if (const PolicyEntry *taken = registry.lookup(entry.name))
      return failure(quoted + " registers the policy '" + entry.name +
                     "', which is already " +
                     (taken->origin == "built in"
                          ? std::string("built into gptc")
                          : "registered by '" + taken->origin + "'") +
                     ": give the plugin's policy another name");
  }
  for (const PolicyEntry &entry : fromPlugin.entries()) {
    PolicyEntry added = entry;
    added.origin = path.str();
    registry.add(std::move(added));
  }
  return llvm::Error::success();
}

} // namespace gptc
