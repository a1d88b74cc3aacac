// The communicator of a job with one rank: every collective is the identity
// (or a copy), so the training loop calls collectives the same way at any
// world size.
#ifndef GPTRT_DIST_LOCALCOMMUNICATOR_H
#define GPTRT_DIST_LOCALCOMMUNICATOR_H

#include "runtime/dist/Communicator.h"

#include <cstring>

namespace gptrt::dist {

class LocalCommunicator final : public Communicator {
public:
  int rank() const override { return 0; }
  int worldSize() const override { return 1; }
  const char *backend() const override { return "local"; }

protected:
  void doAllReduceSum(float *, size_t) override {}
  void doAllReduceMax(float *, size_t) override {}
  void doReduceScatterSum(const float *send, float *recv, size_t n) override {
    copy(send, recv, n);
  }
  void doAllGather(const float *send, float *recv, size_t n) override {
    copy(send, recv, n);
  }
  void doAllToAll(const float *send, float *recv, size_t n) override {
    copy(send, recv, n);
  }
  void doBroadcast(float *, size_t, int) override {}
  void doBarrier() override {}

private:
  static void copy(const float *from, float *to, size_t n) {
    if (from != to) // in place: nothing to move
      std::memcpy(to, from, n * sizeof(float));
  }
};

} // namespace gptrt::dist

#endif // GPTRT_DIST_LOCALCOMMUNICATOR_H
