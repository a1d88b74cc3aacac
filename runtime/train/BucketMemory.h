// Where the gradient exchange's buckets live, and the few operations it
// does on them besides collectives: copies, an amax, the E4M3 coding of
// FP8 gradient communication. Host memory uses the CPU's code; device
// memory (GPU workers) runs runtime/cuda's kernels on the communicator's
// stream, so the exchange's algorithms (GradientBuckets.cpp) are written,
// and tested on CPU ranks, once.
#ifndef GPTRT_TRAIN_BUCKETMEMORY_H
#define GPTRT_TRAIN_BUCKETMEMORY_H

#include <cstddef>
#include <cstdint>
#include <memory>

namespace gptrt::cuda {
class Device;
}

namespace gptrt::train {

class BucketMemory {
public:
  virtual ~BucketMemory() = default;

  // A buffer of at least `floats` floats in this memory, kept between
  // calls: the same `slot` returns the same buffer until it must grow.
  // Contents are unspecified.
  virtual float *buffer(int slot, size_t floats) = 0;
  // Ordered after everything issued before; complete() waits for them.
  virtual void copy(float *dst, const float *src, size_t n) = 0;
  virtual void fillZero(float *dst, size_t n) = 0;
  // amax[0] = max |x[i]|, NaN winning (one float in this memory).
  virtual void amax(const float *x, size_t n, float *amax) = 0;
  // codes[i] = E4M3(x[i] * gradientFp8Scale(amax[0])).
  virtual void encodeE4M3(const float *x, size_t n, const float *amax,
                          uint8_t *codes) = 0;
  // x[i] = sum over r < ranks (rank 0 first, from 0) of the decoded
  // codes[r * stride + i] divided by the scale.
  virtual void decodeSumE4M3(const uint8_t *codes, int ranks, size_t stride,
                             size_t n, const float *amax, float *x) = 0;
  // Returns once everything issued has finished.
  virtual void complete() = 0;

  // How long the work issued between startTiming() and stopTiming() took
  // where it ran (on the stream, or by the host clock); stopTiming waits
  // for it.
  virtual void startTiming() = 0;
  virtual double stopTiming() = 0;
  // markComputeDone() when the training thread has issued the whole
  // backward (gptrt_grad_sync); exposedSeconds() once every bucket is done:
  // how long after the backward's end the last bucket's work ended, at
  // least 0 -- what communication cost the step beyond the overlap.
  virtual void markComputeDone() = 0;
  virtual double exposedSeconds() = 0;
};

std::unique_ptr<BucketMemory> hostBucketMemory();
// Device memory of `device`, operations on `stream` (a cudaStream_t: the
// NCCL communicator's, see dist::Communicator::deviceStream).
std::unique_ptr<BucketMemory> deviceBucketMemory(cuda::Device &device,
                                                 void *stream);

} // namespace gptrt::train

#endif // GPTRT_TRAIN_BUCKETMEMORY_H
