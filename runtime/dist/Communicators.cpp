// Making communicators; loading libgptrt-gloo.so on demand (see
// Communicators.h).
#include "runtime/dist/Communicators.h"

#include "runtime/dist/LocalCommunicator.h"
#include "runtime/dist/Store.h"

#include <atomic>
#include <cstdlib>
#include <dlfcn.h>
#include <filesystem>
#include <stdexcept>
#include <system_error>
#include <unistd.h>

#ifndef GPTRT_INSTALL_LIBDIR
#define GPTRT_INSTALL_LIBDIR "lib"
#endif

namespace gptrt::dist {

namespace fs = std::filesystem;

std::unique_ptr<Communicator> makeLocalCommunicator() {
  return std::make_unique<LocalCommunicator>();
}

std::string executableDir() {
  std::error_code ec;
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  return ec ? std::string(".") : exe.parent_path().string();
}

std::vector<std::string> glooLibraryCandidates(const std::string &override,
                                               const std::string &exeDir) {
  if (!override.empty())
    return {override};
  fs::path dir(exeDir);
  std::vector<std::string> candidates;
  for (fs::path path : {dir / ".." / GPTRT_INSTALL_LIBDIR, dir / ".." / "lib",
                        dir}) {
    std::string file =
        (path / GPTRT_GLOO_LIBRARY_NAME).lexically_normal().string();
    bool seen = false;
    for (const std::string &c : candidates)
      seen |= c == file;
    if (!seen)
      candidates.push_back(file);
  }
  return candidates;
}

GptrtGlooCreateFn loadGlooLibrary(const std::vector<std::string> &candidates,
                                  bool fromEnvironment) {
  std::string tried;
  for (const std::string &path : candidates) {
    if (!tried.empty())
      tried += ", ";
    if (::access(path.c_str(), F_OK) != 0) {
      tried += path + " (not found)";
      continue;
    }
    void *handle = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) {
      // It is there but does not load: usually libgloo.so.0 itself is
      // missing on this machine. Searching further would hide that.
      const char *why = ::dlerror();
      throw std::runtime_error(
          "cannot load the Gloo communicator library " + path + " (" +
          (why ? why : "unknown error") +
          "): install Gloo's runtime library (Debian package libgloo0; "
          "tools/setup.sh installs libgloo-dev) or rebuild " +
          GPTRT_GLOO_LIBRARY_NAME);
    }
    auto create = reinterpret_cast<GptrtGlooCreateFn>(
        ::dlsym(handle, GPTRT_GLOO_FACTORY_SYMBOL));
    if (create == nullptr)
      throw std::runtime_error(
          path + " is not the Gloo communicator library (it has no " +
          GPTRT_GLOO_FACTORY_SYMBOL + "): point " +
          (fromEnvironment ? "GPTRT_GLOO_LIB" : "the search") + " at " +
          GPTRT_GLOO_LIBRARY_NAME + " from this build");
    return create;
  }
  if (fromEnvironment)
    throw std::runtime_error(
        "GPTRT_GLOO_LIB names a missing file: tried " + tried +
        ": set GPTRT_GLOO_LIB to the path of " + GPTRT_GLOO_LIBRARY_NAME +
        ", or unset it to search next to the executable");
  throw std::runtime_error(
      std::string("the Gloo communicator library ") + GPTRT_GLOO_LIBRARY_NAME +
      " was not found; tried " + tried +
      ": build it (ninja gptrt-gloo), install it next to the executable "
      "(cmake --install), or set GPTRT_GLOO_LIB to its path");
}

std::unique_ptr<Communicator> makeGlooCommunicator(StoreClient &store, int rank,
                                                   int worldSize,
                                                   const GlooOptions &options) {
  if (worldSize < 1 || rank < 0 || rank >= worldSize)
    throw std::invalid_argument(
        "Gloo communicator: rank " + std::to_string(rank) +
        " is out of range for world size " + std::to_string(worldSize) +
        ": expected 0 <= rank < world size");
  if (options.timeout.count() <= 0)
    throw std::invalid_argument("Gloo communicator: the timeout must be "
                                "positive, not " +
                                std::to_string(options.timeout.count()) + " ms");

  GptrtGlooCreateFn create;
  if (!options.library.empty()) {
    create = loadGlooLibrary({options.library}, false);
  } else {
    const char *override = std::getenv("GPTRT_GLOO_LIB");
    bool fromEnvironment = override && *override;
    create = loadGlooLibrary(
        glooLibraryCandidates(fromEnvironment ? override : "", executableDir()),
        fromEnvironment);
  }

  std::string iface = options.iface;
  if (iface.empty()) {
    const char *env = std::getenv("GLOO_SOCKET_IFNAME");
    iface = env ? env : "";
  }
  std::string hostname = options.hostname;
  if (iface.empty() && hostname.empty())
    hostname = store.localAddress();
  std::string prefix = options.keyPrefix;
  if (prefix.empty()) {
    static std::atomic<int> made{0};
    prefix = "gloo/" + std::to_string(made++) + "/";
  }

  GptrtGlooConfig config{};
  config.version = GPTRT_GLOO_PLUGIN_VERSION;
  config.rank = rank;
  config.worldSize = worldSize;
  config.timeoutMs = options.timeout.count();
  config.hostname = hostname.c_str();
  config.iface = iface.c_str();
  config.keyPrefix = prefix.c_str();
  config.store = &store;
  char error[2048] = {};
  Communicator *communicator = create(&config, error, sizeof(error));
  if (communicator == nullptr)
    throw std::runtime_error(error[0] ? error
                                      : "the Gloo communicator could not be "
                                        "created (no reason given)");
  return std::unique_ptr<Communicator>(communicator);
}

} // namespace gptrt::dist
