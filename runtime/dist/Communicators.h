// Making communicators. The Gloo communicator lives in libgptrt-gloo.so,
// which is dlopened here on first use so that programs linking the runtime
// carry no dependency on libgloo (DESIGN.md section 5). The library is
// looked for, in order:
//   1. $GPTRT_GLOO_LIB, when set (then nothing else is tried);
//   2. <executable dir>/../<install libdir>/libgptrt-gloo.so, then
//      <executable dir>/../lib/libgptrt-gloo.so (the install layout, and
//      the build tree's bin/ + lib/);
//   3. <executable dir>/libgptrt-gloo.so.
// Once loaded it stays loaded for the life of the process.
#ifndef GPTRT_DIST_COMMUNICATORS_H
#define GPTRT_DIST_COMMUNICATORS_H

#include "runtime/dist/Communicator.h"
#include "runtime/dist/GlooPlugin.h"

#include <chrono>
#include <memory>
#include <string>
#include <vector>

namespace gptrt::dist {

class StoreClient;

std::unique_ptr<Communicator> makeLocalCommunicator();

struct GlooOptions {
  // Bounds the rendezvous and every collective: a rank that died or stalled
  // longer than this makes the others throw instead of hang. It must exceed
  // the longest time one rank can spend away from collectives while the
  // others wait (an evaluation, a checkpoint write).
  std::chrono::milliseconds timeout = std::chrono::minutes(10);
  // The network interface Gloo uses ("eth0"); empty: $GLOO_SOCKET_IFNAME,
  // as PyTorch reads it.
  std::string iface;
  // Without an interface: the address peers reach this rank at; empty: the
  // local address of the store connection (the interface that reaches
  // rank 0).
  std::string hostname;
  // Namespace of this communicator's keys in the store; empty: "gloo/<n>/"
  // with n counting the Gloo communicators this process made, which agrees
  // across ranks as long as they create communicators in the same order.
  std::string keyPrefix;
  // Path of libgptrt-gloo.so; empty: the search above.
  std::string library;
};

// Connects `worldSize` ranks over Gloo's TCP transport; every rank calls
// it with the same worldSize and its own rank. The store is only used
// during this call. Sets SIGPIPE to ignored when it has its default action
// (a dead peer must produce an error, not kill the process). Throws
// std::runtime_error when the library cannot be loaded (naming the paths
// tried and the fix), or the rendezvous fails or times out.
std::unique_ptr<Communicator> makeGlooCommunicator(StoreClient &store, int rank,
                                                   int worldSize,
                                                   const GlooOptions &options = {});

// The directory of the running executable (from /proc/self/exe).
std::string executableDir();

// Where the library is looked for: `override` alone when non-empty
// ($GPTRT_GLOO_LIB), else the paths next to `exeDir` listed above.
std::vector<std::string> glooLibraryCandidates(const std::string &override,
                                               const std::string &exeDir);

// dlopens the first candidate that exists and returns its factory. Throws
// std::runtime_error naming every path tried and why each failed (missing,
// not loadable -- e.g. libgloo.so.0 not installed --, or not the Gloo
// library), with the fix. `fromEnvironment` says the single candidate came
// from $GPTRT_GLOO_LIB, for the message.
GptrtGlooCreateFn loadGlooLibrary(const std::vector<std::string> &candidates,
                                  bool fromEnvironment);

} // namespace gptrt::dist

#endif // GPTRT_DIST_COMMUNICATORS_H
