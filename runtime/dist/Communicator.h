// Collective operations across the ranks of a data-parallel job, as the
// training loop sees them. Implementations: LocalCommunicator (one rank, no
// communication), the Gloo communicator (CPU, loaded on demand, see
// Communicators.h) and later NCCL.
//
// Every rank must call the same collectives in the same order with the same
// element counts. The public functions check their arguments identically on
// every rank (counts, roots) before any communication, so a bad count
// throws everywhere instead of leaving peers waiting. Results are identical
// on every rank, bit for bit: each element is reduced once and the result
// is copied, not reduced again in a different order.
//
// Everything here is inline on purpose: the Gloo library derives from this
// class without linking the runtime, so the class must not need any symbol
// defined elsewhere.
#ifndef GPTRT_DIST_COMMUNICATOR_H
#define GPTRT_DIST_COMMUNICATOR_H

#include <cstddef>
#include <functional>
#include <stdexcept>
#include <string>

namespace gptrt::dist {

class Communicator {
public:
  virtual ~Communicator() = default;

  virtual int rank() const = 0;
  virtual int worldSize() const = 0;
  // "local", "gloo": for logs.
  virtual const char *backend() const = 0;

  // Orders the next collective after device work: `event` is a
  // cudaEvent_t recorded on the stream that wrote its buffers (null:
  // nothing to wait for). A communicator with a device stream (NCCL) makes
  // that stream wait for the event, so the writer's host thread never
  // blocks; the others ignore it, their callers hand over finished
  // buffers (the CPU's kernels are synchronous).
  virtual void waitForDeviceEvent(void *event) { (void)event; }
  // The cudaStream_t this communicator's collectives run on (NCCL), null
  // for host communicators. Work on a gradient bucket between collectives
  // (runtime/train/BucketMemory) goes on the same stream, in order.
  virtual void *deviceStream() const { return nullptr; }

  // data[i] = sum over ranks of data[i], in place. NaN and inf propagate.
  void allReduceSum(float *data, size_t n) {
    checkBuffer("allReduceSum", data, n);
    if (n > 0)
      doAllReduceSum(data, n);
  }
  // data[i] = max over ranks of data[i], in place. A NaN on any rank makes
  // the result NaN (an amax must not hide an overflow).
  void allReduceMax(float *data, size_t n) {
    checkBuffer("allReduceMax", data, n);
    if (n > 0)
      doAllReduceMax(data, n);
  }

  // Reduce-scatter: `send` holds n elements on every rank, n a multiple of
  // worldSize(); afterwards this rank's `recv` holds n / worldSize()
  // elements, the sum over ranks of its slice
  // send[rank * n/world, (rank + 1) * n/world). In place when
  // recv == send + rank * n/world (NCCL's convention); any other overlap
  // is refused. Counts that are not a multiple of the world size throw on
  // every rank: pad the buffer (see paddedCount) so that every rank owns an
  // equal slice, which is what ZeRO-1 sharding needs anyway.
  void reduceScatterSum(const float *send, float *recv, size_t n) {
    checkBuffer("reduceScatterSum", send, n);
    checkDivisible("reduceScatterSum", n);
    size_t slice = n / static_cast<size_t>(worldSize());
    checkBuffer("reduceScatterSum", recv, slice);
    checkOverlap("reduceScatterSum", send, n, recv, slice,
                 send + static_cast<size_t>(rank()) * slice,
                 "recv == send + rank * n / world");
    if (n > 0)
      doReduceScatterSum(send, recv, n);
  }

  // All-gather: every rank contributes n elements from `send`; afterwards
  // `recv` (n * worldSize() elements) holds rank r's at recv + r * n on
  // every rank. In place when send == recv + rank * n.
  void allGather(const float *send, float *recv, size_t n) {
    checkBuffer("allGather", send, n);
    size_t total = n * static_cast<size_t>(worldSize());
    checkBuffer("allGather", recv, total);
    checkOverlap("allGather", recv, total, send, n,
                 recv + static_cast<size_t>(rank()) * n,
                 "send == recv + rank * n");
    if (n > 0)
      doAllGather(send, recv, n);
  }

  // All-to-all: `send` holds worldSize() blocks of n elements, block r for
  // rank r; afterwards block r of `recv` holds the block rank r sent this
  // rank. The buffers must not overlap. (FP8 gradient communication sends
  // each slice of a bucket to the rank that sums it this way.)
  void allToAll(const float *send, float *recv, size_t n) {
    const size_t total = n * static_cast<size_t>(worldSize());
    checkBuffer("allToAll", send, total);
    checkBuffer("allToAll", recv, total);
    std::less<const float *> before;
    if (before(send, recv + total) && before(recv, send + total))
      throw std::invalid_argument(
          "allToAll: the send and recv buffers overlap: use separate "
          "buffers");
    if (n > 0)
      doAllToAll(send, recv, n);
  }

  // Copies root's data[0, n) to every rank's data.
  void broadcast(float *data, size_t n, int root) {
    checkBuffer("broadcast", data, n);
    if (root < 0 || root >= worldSize())
      throw std::invalid_argument(
          "broadcast: root rank " + std::to_string(root) +
          " is out of range: expected 0 <= root < world size " +
          std::to_string(worldSize()));
    if (n > 0)
      doBroadcast(data, n, root);
  }

  // Returns once every rank has called barrier().
  void barrier() { doBarrier(); }

  // The smallest count >= n that reduceScatterSum accepts.
  size_t paddedCount(size_t n) const {
    size_t world = static_cast<size_t>(worldSize());
    return (n + world - 1) / world * world;
  }

protected:
  // Arguments are checked and n > 0.
  virtual void doAllReduceSum(float *data, size_t n) = 0;
  virtual void doAllReduceMax(float *data, size_t n) = 0;
  virtual void doReduceScatterSum(const float *send, float *recv, size_t n) = 0;
  virtual void doAllGather(const float *send, float *recv, size_t n) = 0;
  virtual void doAllToAll(const float *send, float *recv, size_t n) = 0;
  virtual void doBroadcast(float *data, size_t n, int root) = 0;
  virtual void doBarrier() = 0;

private:
  static void checkBuffer(const char *op, const float *data, size_t n) {
    if (data == nullptr && n > 0)
      throw std::invalid_argument(std::string(op) + ": null buffer for " +
                                  std::to_string(n) + " elements");
  }
  void checkDivisible(const char *op, size_t n) const {
    if (n % static_cast<size_t>(worldSize()) != 0)
      throw std::invalid_argument(
          std::string(op) + ": " + std::to_string(n) +
          " elements is not a multiple of the world size " +
          std::to_string(worldSize()) + ": pad the buffer to " +
          std::to_string(paddedCount(n)) +
          " elements so that every rank owns an equal slice");
  }
  // `part` (partN elements) may lie inside `whole` only at `inPlace`.
  static void checkOverlap(const char *op, const float *whole, size_t wholeN,
                           const float *part, size_t partN,
                           const float *inPlace, const char *rule) {
    std::less<const float *> before;
    bool overlap = before(part, whole + wholeN) && before(whole, part + partN);
    if (overlap && part != inPlace)
      throw std::invalid_argument(
          std::string(op) +
          ": the send and recv buffers overlap other than in place: use "
          "separate buffers or " +
          rule);
  }
};

} // namespace gptrt::dist

#endif // GPTRT_DIST_COMMUNICATOR_H
