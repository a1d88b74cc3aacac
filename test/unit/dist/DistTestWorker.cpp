// A worker for the launcher's end-to-end tests: reads its place from the
// environment the launcher set, joins the store (rank 0 hosts it) and a
// Gloo communicator, and runs a collective.
//   dist-test-worker allreduce   every rank checks a sum and prints "ok"
//   dist-test-worker die         rank 1 is SIGKILLed before the collective;
//                                rank 0 reports the error and exits 1
//                                (ignoring the launcher's SIGTERM meanwhile)
#include "runtime/dist/Communicators.h"
#include "runtime/dist/Store.h"
#include "runtime/dist/StoreServer.h"
#include "runtime/dist/WorkerInfo.h"

#include <chrono>
#include <csignal>
#include <cstdio>
#include <memory>
#include <string>
#include <thread>
#include <vector>

using namespace gptrt::dist;
using namespace std::chrono_literals;

int main(int argc, char **argv) {
  std::string mode = argc > 1 ? argv[1] : "";
  try {
    WorkerInfo me = readWorkerInfo(processEnvironment());
    if (mode == "die" && me.rank == 0) {
      // The launcher SIGTERMs the survivors of a failure; this one must
      // live long enough to print its own error for the test to check.
      sigset_t term;
      sigemptyset(&term);
      sigaddset(&term, SIGTERM);
      sigprocmask(SIG_BLOCK, &term, nullptr);
    }
    std::unique_ptr<StoreServer> server;
    if (me.rank == 0)
      server = std::make_unique<StoreServer>(
          static_cast<uint16_t>(me.masterPort), "127.0.0.1");
    StoreClient store(me.masterAddr, static_cast<uint16_t>(me.masterPort),
                      me.rank, 10s);
    GlooOptions options;
    options.timeout = 5s;
    auto comm = makeGlooCommunicator(store, me.rank, me.worldSize, options);
    // A first collective completes the connections on both sides; dying
    // earlier could break rank 0's rendezvous instead of its collective.
    comm->barrier();
    if (mode == "die" && me.rank == 1)
      ::raise(SIGKILL);

    std::vector<float> data(1000, static_cast<float>(me.rank + 1));
    comm->allReduceSum(data.data(), data.size());
    const float want = me.worldSize * (me.worldSize + 1) / 2.0f;
    for (float x : data)
      if (x != want) {
        std::fprintf(stderr, "wrong sum %g, expected %g\n", x, want);
        return 1;
      }
    std::printf("allreduce ok: rank %d of %d, local rank %d, sum %g\n",
                me.rank, me.worldSize, me.localRank, want);
    // Rank 0's store must outlive everyone's use of it.
    storeBarrier(store, "done", me.worldSize, 10s);
    return 0;
  } catch (const std::exception &e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    std::fflush(stderr);
    // Let the launcher see the first failure (rank 1's death) first.
    std::this_thread::sleep_for(300ms);
    return 1;
  }
}
