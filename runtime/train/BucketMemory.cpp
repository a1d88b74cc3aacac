// Host and device BucketMemory (see BucketMemory.h).
#include "runtime/train/BucketMemory.h"

#include "runtime/core/GradientFp8Scale.h"
#include "runtime/cpu/Fp8.h"
#include "runtime/cuda/Backend.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

namespace gptrt::train {

namespace {

class HostBucketMemory final : public BucketMemory {
public:
  float *buffer(int slot, size_t floats) override {
    std::vector<float> &b = buffers_[slot];
    if (b.size() < floats)
      b.resize(floats);
    return b.data();
  }
  void copy(float *dst, const float *src, size_t n) override {
    std::copy_n(src, n, dst);
  }
  void fillZero(float *dst, size_t n) override { std::fill_n(dst, n, 0.0f); }
  void amax(const float *x, size_t n, float *out) override {
    float m = 0.0f;
    for (size_t i = 0; i < n; ++i)
      m = std::isnan(x[i]) || std::isnan(m) ? NAN
                                            : std::max(m, std::fabs(x[i]));
    out[0] = m;
  }
  void encodeE4M3(const float *x, size_t n, const float *amax,
                  uint8_t *codes) override {
    const float scale = gradientFp8Scale(amax[0]);
    for (size_t i = 0; i < n; ++i)
      codes[i] = cpu::floatToE4M3(x[i] * scale);
  }
  void decodeSumE4M3(const uint8_t *codes, int ranks, size_t stride, size_t n,
                     const float *amax, float *x) override {
    const float scale = gradientFp8Scale(amax[0]);
    std::fill_n(x, n, 0.0f);
    for (int r = 0; r < ranks; ++r) {
      const uint8_t *theirs = codes + static_cast<size_t>(r) * stride;
      for (size_t i = 0; i < n; ++i)
        x[i] += cpu::e4m3ToFloat(theirs[i]) / scale;
    }
  }
  void complete() override {}

  // The host's collectives block, so the host clock is the stream.
  void startTiming() override { started_ = Clock::now(); }
  double stopTiming() override { return secondsSince(started_); }
  void markComputeDone() override { computeDone_ = Clock::now(); }
  double exposedSeconds() override { return secondsSince(computeDone_); }

private:
  using Clock = std::chrono::steady_clock;
  static double secondsSince(Clock::time_point t) {
    return std::chrono::duration<double>(Clock::now() - t).count();
  }
  std::map<int, std::vector<float>> buffers_;
  Clock::time_point started_, computeDone_;
};

class DeviceBucketMemory final : public BucketMemory {
public:
  DeviceBucketMemory(cuda::Device &device, void *stream)
      : device_(device), stream_(stream) {
    if (stream == nullptr)
      throw std::invalid_argument(
          "the gradient exchange of a GPU worker needs a communicator with a "
          "device stream (NCCL): GPU workers are started with --gpus G");
  }
  ~DeviceBucketMemory() override {
    // A buffer may still be in use by the stream after a failure.
    try {
      device_.synchronizeStream(stream_);
    } catch (...) {
    }
    for (void *event : {start_, stop_, computeDone_})
      device_.deleteTimingEvent(event);
  }

  float *buffer(int slot, size_t floats) override {
    Buffer &b = buffers_[slot];
    if (b.floats < floats) {
      device_.synchronizeStream(stream_); // nothing may still use the old one
      b.data.reset();
      b.floats = 0;
      b.data = {device_.allocZeroed(floats * sizeof(float),
                                    "gradient exchange buffer " +
                                        std::to_string(slot)),
                device_.freeFunction()};
      b.floats = floats;
    }
    return static_cast<float *>(b.data.get());
  }
  void copy(float *dst, const float *src, size_t n) override {
    device_.copyOnStream(stream_, dst, src, n * sizeof(float));
  }
  void fillZero(float *dst, size_t n) override {
    device_.zeroOnStream(stream_, dst, n * sizeof(float));
  }
  void amax(const float *x, size_t n, float *out) override {
    device_.gradientAmax(stream_, x, static_cast<int64_t>(n), out);
  }
  void encodeE4M3(const float *x, size_t n, const float *amax,
                  uint8_t *codes) override {
    device_.gradientEncodeE4M3(stream_, x, static_cast<int64_t>(n), amax,
                               codes);
  }
  void decodeSumE4M3(const uint8_t *codes, int ranks, size_t stride, size_t n,
                     const float *amax, float *x) override {
    device_.gradientDecodeSumE4M3(stream_, codes, ranks,
                                  static_cast<int64_t>(stride),
                                  static_cast<int64_t>(n), amax, x);
  }
  void complete() override { device_.synchronizeStream(stream_); }

  void startTiming() override { device_.recordTimingEvent(start_, stream_); }
  double stopTiming() override {
    device_.recordTimingEvent(stop_, stream_);
    stopped_ = true;
    return std::max(0.0, device_.secondsBetween(start_, stop_));
  }
  void markComputeDone() override {
    device_.recordTimingEvent(computeDone_, nullptr); // the compute stream
  }
  double exposedSeconds() override {
    // stop_ is the last bucket's end (buckets run one after the other).
    if (!stopped_.exchange(false))
      return 0.0;
    return std::max(0.0, device_.secondsBetween(computeDone_, stop_));
  }

private:
  struct Buffer {
    std::unique_ptr<void, cuda::Device::FreeFn> data{nullptr, nullptr};
    size_t floats = 0;
  };
  cuda::Device &device_;
  void *stream_;
  std::map<int, Buffer> buffers_;
  void *start_ = device_.newTimingEvent(), *stop_ = device_.newTimingEvent(),
       *computeDone_ = device_.newTimingEvent();
  // stop_ recorded since the last exposedSeconds (set by the exchange's
  // thread, read by the training thread).
  std::atomic<bool> stopped_{false};
};

} // namespace

std::unique_ptr<BucketMemory> hostBucketMemory() {
  return std::make_unique<HostBucketMemory>();
}

std::unique_ptr<BucketMemory> deviceBucketMemory(cuda::Device &device,
                                                 void *stream) {
  return std::make_unique<DeviceBucketMemory>(device, stream);
}

} // namespace gptrt::train
