// Reduce-scatter over Gloo's point-to-point transport. This Gloo has no
// reduce-scatter with the new-style options API (only the old bound-buffer
// ReduceScatterHalvingDoubling, which takes int counts and needs the whole
// buffer writable), and an all-reduce would move twice the data that ZeRO-1
// needs, so it is a ring of world-1 steps over slices of n/world elements.
#ifndef GPTRT_DIST_GLOO_RINGREDUCESCATTER_H
#define GPTRT_DIST_GLOO_RINGREDUCESCATTER_H

#include <chrono>
#include <cstddef>

namespace gloo {
class Context;
}

namespace gptrt::dist {

// recv[0, n/world) = sum over ranks of send[rank*n/world, (rank+1)*n/world).
// n must be a multiple of the world size; recv may be send + rank*n/world.
// Throws (Gloo's exceptions) when a peer fails or `timeout` passes in any
// step.
void ringReduceScatterSum(gloo::Context &context, const float *send,
                          float *recv, size_t n,
                          std::chrono::milliseconds timeout);

} // namespace gptrt::dist

#endif // GPTRT_DIST_GLOO_RINGREDUCESCATTER_H
