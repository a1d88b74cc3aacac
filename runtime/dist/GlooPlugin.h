// The contract between the runtime and libgptrt-gloo.so, the shared library
// that holds the Gloo communicator. The runtime dlopens it only when a Gloo
// communicator is asked for (DESIGN.md section 5), so programs linking the
// runtime never need libgloo. The library exports one extern "C" function,
// gptrt_gloo_create; the version field lets a runtime refuse a library from
// another build with a clear message instead of crashing.
#ifndef GPTRT_DIST_GLOOPLUGIN_H
#define GPTRT_DIST_GLOOPLUGIN_H

#include <cstddef>
#include <cstdint>

namespace gptrt::dist {
class Communicator;
class Store;
} // namespace gptrt::dist

// Bump whenever this struct, Communicator or Store change layout or virtual
// functions.
#define GPTRT_GLOO_PLUGIN_VERSION 1
#define GPTRT_GLOO_LIBRARY_NAME "libgptrt-gloo.so"
#define GPTRT_GLOO_FACTORY_SYMBOL "gptrt_gloo_create"

struct GptrtGlooConfig {
  int32_t version; // GPTRT_GLOO_PLUGIN_VERSION of the caller
  int32_t rank;
  int32_t worldSize;
  int64_t timeoutMs;     // rendezvous and every collective
  const char *hostname;  // address peers reach this rank at; or ""
  const char *iface;     // network interface to use instead; or ""
  const char *keyPrefix; // namespace of this communicator's store keys
  gptrt::dist::Store *store;
};

// Creates the communicator (rendezvous included). On failure returns null
// and writes a one-line message into error[0, errorCapacity). The library
// is built with hidden visibility; this is its only exported symbol.
extern "C" __attribute__((visibility("default"))) gptrt::dist::Communicator *
gptrt_gloo_create(const GptrtGlooConfig *config, char *error,
                  size_t errorCapacity);

using GptrtGlooCreateFn = decltype(&gptrt_gloo_create);

#endif // GPTRT_DIST_GLOOPLUGIN_H
