// Background all-reduce of gradient buckets (see GradientBuckets.h).
#include "runtime/train/GradientBuckets.h"

#include "runtime/core/OptimizerShard.h"
#include "runtime/cpu/Fp8.h"
#include "runtime/train/RankSync.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <stdexcept>
#include <vector>

namespace gptrt::train {

BackgroundGradientExchange::BackgroundGradientExchange(dist::Communicator &comm)
    : comm_(comm), thread_([this] { run(); }) {}

BackgroundGradientExchange::~BackgroundGradientExchange() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  changed_.notify_all();
  thread_.join();
}

void BackgroundGradientExchange::start(float *grads, int64_t n,
                                       int64_t bucket, int64_t fp8Format,
                                       bool scatter, void *ready) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    queue_.push_back({grads, n, bucket, fp8Format, scatter, ready});
    ++started_;
  }
  changed_.notify_all();
}

namespace {

using Clock = std::chrono::steady_clock;

double secondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

} // namespace

BackgroundGradientExchange::Timing BackgroundGradientExchange::takeTiming() {
  std::lock_guard<std::mutex> lock(mutex_);
  Timing t = timing_;
  timing_ = {};
  return t;
}

void BackgroundGradientExchange::finish(int64_t buckets) {
  std::unique_lock<std::mutex> lock(mutex_);
  const Clock::time_point waiting = Clock::now();
  changed_.wait(lock, [&] { return queue_.empty() && !busy_; });
  timing_.exposedSeconds += secondsSince(waiting);
  int64_t started = started_;
  started_ = 0;
  if (!error_.empty()) {
    std::string error = error_;
    error_.clear();
    throw std::runtime_error(error);
  }
  if (started != buckets)
    throw std::runtime_error(
        "this step started " + std::to_string(started) +
        " gradient buckets, train_step expected " + std::to_string(buckets) +
        ": the artifact and the runtime disagree; rebuild it with this gptc");
}

void BackgroundGradientExchange::sumAsFp8(const Job &job) {
  const int world = comm_.worldSize();
  const size_t n = static_cast<size_t>(job.n);
  // One scale for all ranks: from the largest magnitude anywhere, so every
  // rank's codes mean the same thing (NaN stays NaN through the max).
  float amax = 0.0f;
  for (size_t i = 0; i < n; ++i)
    amax = std::isnan(job.grads[i]) || std::isnan(amax)
               ? NAN
               : std::max(amax, std::fabs(job.grads[i]));
  comm_.allReduceMax(&amax, 1);
  // 448: E4M3's largest finite value (OCP FP8). Summed in f32 after the
  // transfer, so -- unlike a sum in FP8 (FP8-LM) -- no pre-division by the
  // world size is needed to keep the sum in range.
  const float scale = amax > 0.0f && std::isfinite(amax) ? 448.0f / amax : 1.0f;
  // The codes travel packed four to a float (the all-gather moves bytes).
  const size_t words = (n + 3) / 4;
  std::vector<float> mine(words, 0.0f), all(words * world);
  uint8_t *codes = reinterpret_cast<uint8_t *>(mine.data());
  for (size_t i = 0; i < n; ++i)
    codes[i] = cpu::floatToE4M3(job.grads[i] * scale);
  comm_.allGather(mine.data(), all.data(), words);
  // The same order on every rank: rank 0's values first.
  std::fill(job.grads, job.grads + n, 0.0f);
  for (int r = 0; r < world; ++r) {
    const uint8_t *theirs = reinterpret_cast<const uint8_t *>(all.data() + r * words);
    for (size_t i = 0; i < n; ++i)
      job.grads[i] += cpu::e4m3ToFloat(theirs[i]) / scale;
  }
}

void BackgroundGradientExchange::scatterSum(const Job &job) {
  const int world = comm_.worldSize(), rank = comm_.rank();
  const BucketSlice mine = bucketSlice(job.n, rank, world);
  if (mine.stride == 0)
    return;
  // Padded to equal slices in a copy: in place, the padding would be the
  // next bucket's gradients, which the backward may still be writing.
  const size_t padded = static_cast<size_t>(mine.stride) * world;
  staging_.assign(padded, 0.0f);
  std::copy_n(job.grads, job.n, staging_.begin());
  float *slice = staging_.data() + static_cast<size_t>(rank) * mine.stride;
  comm_.reduceScatterSum(staging_.data(), slice, padded);
  std::copy_n(slice, mine.count, job.grads + mine.begin);
}

double BackgroundGradientExchange::sumOverRanks(double local) {
  const Clock::time_point start = Clock::now();
  double sum = train::sumOverRanks(comm_, local);
  std::lock_guard<std::mutex> lock(mutex_);
  timing_.busySeconds += secondsSince(start);
  timing_.exposedSeconds += secondsSince(start);
  return sum;
}

void BackgroundGradientExchange::gatherParams(float *params,
                                              const OptimizerShard &shard) {
  if (shard.world() != comm_.worldSize() || shard.rank() != comm_.rank())
    throw std::logic_error("the optimizer shard is rank " +
                           std::to_string(shard.rank()) + " of " +
                           std::to_string(shard.world()) +
                           ", the communicator rank " +
                           std::to_string(comm_.rank()) + " of " +
                           std::to_string(comm_.worldSize()));
  const Clock::time_point start = Clock::now();
  // One all-gather for the whole step, in place: each rank packs its
  // slices in shard order into its part of the buffer, every rank places
  // everyone's. The buffer is kept: it is the size of the parameters.
  const size_t local = static_cast<size_t>(shard.localElements());
  gathered_.resize(local * comm_.worldSize());  // padding is never read
  float *mine = gathered_.data() + local * static_cast<size_t>(comm_.rank());
  for (const OptimizerShard::Range &r : shard.owned())
    std::copy_n(params + r.gradBegin, r.count, mine + r.localBegin);
  comm_.allGather(mine, gathered_.data(), local);
  shard.place(gathered_.data(), local, params);
  std::lock_guard<std::mutex> lock(mutex_);
  timing_.busySeconds += secondsSince(start);
  timing_.exposedSeconds += secondsSince(start);
}

void BackgroundGradientExchange::run() {
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    changed_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
    if (queue_.empty())
      return;  // stopping, nothing left
    Job job = queue_.front();
    queue_.pop_front();
    busy_ = true;
    lock.unlock();
    std::string error;
    const Clock::time_point started = Clock::now();
    try {
      // Buckets go in the order they are started, the same on every rank,
      // so the collectives match up.
      comm_.waitForDeviceEvent(job.ready);
      if (job.scatter)
        scatterSum(job);
      else if (job.fp8Format < 0)
        comm_.allReduceSum(job.grads, static_cast<size_t>(job.n));
      else
        sumAsFp8(job);
    } catch (const std::exception &e) {
      error = "summing gradient bucket " + std::to_string(job.bucket) +
              " across ranks failed: " + e.what();
    }
    lock.lock();
    timing_.busySeconds += secondsSince(started);
    busy_ = false;
    if (!error.empty() && error_.empty())
      error_ = error;
    changed_.notify_all();
  }
}

} // namespace gptrt::train
