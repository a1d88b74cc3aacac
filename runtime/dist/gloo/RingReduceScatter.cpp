// The ring reduce-scatter (see RingReduceScatter.h).
//
// Rank r starts by sending its copy of slice r-1 to rank r+1. In step s it
// receives from rank r-1 a partial sum of slice r-s-2, adds its own copy of
// that slice and, unless this was the last step, sends the result on. After
// world-1 steps the partial that reaches rank r is slice r summed over all
// ranks. Slice k is summed in the order x[k+1] + x[k+2] + ... + x[k], the
// same on every run.
#include "runtime/dist/gloo/RingReduceScatter.h"

#include <gloo/common/error.h>
#include <gloo/context.h>
#include <gloo/transport/unbound_buffer.h>
#include <gloo/types.h>

#include <cstring>
#include <vector>

namespace gptrt::dist {

namespace {

// A slot prefix no Gloo collective uses (theirs are 0x01-0x08), so these
// messages never match a Gloo collective's.
constexpr uint8_t kRingReduceScatterSlotPrefix = 0x40;

} // namespace

void ringReduceScatterSum(gloo::Context &context, const float *send,
                          float *recv, size_t n,
                          std::chrono::milliseconds timeout) {
  const int world = context.size;
  const int rank = context.rank;
  const size_t slice = n / static_cast<size_t>(world);
  if (world == 1) {
    if (recv != send)
      std::memcpy(recv, send, slice * sizeof(float));
    return;
  }
  auto sliceOf = [&](int r) {
    return send + static_cast<size_t>((r % world + world) % world) * slice;
  };
  const int next = (rank + 1) % world;
  const int previous = (rank + world - 1) % world;
  const uint64_t slot = gloo::Slot::build(kRingReduceScatterSlotPrefix, 0);

  std::vector<float> outgoing(sliceOf(rank - 1), sliceOf(rank - 1) + slice);
  std::vector<float> incoming(slice);
  auto out = context.createUnboundBuffer(outgoing.data(), slice * sizeof(float));
  auto in = context.createUnboundBuffer(incoming.data(), slice * sizeof(float));
  for (int step = 0; step < world - 1; ++step) {
    out->send(next, slot);
    in->recv(previous, slot);
    if (!in->waitRecv(timeout) || !out->waitSend(timeout))
      GLOO_THROW_IO_EXCEPTION("reduce-scatter step ", step, " was aborted");
    // Both transfers are done, so `outgoing` may be overwritten. On the
    // last step the slice is this rank's own, which is also where an
    // in-place recv points: each element is read before it is written.
    const float *own = sliceOf(rank - step - 2);
    float *sum = step == world - 2 ? recv : outgoing.data();
    for (size_t i = 0; i < slice; ++i)
      sum[i] = incoming[i] + own[i];
  }
}

} // namespace gptrt::dist
