// Background all-reduce of gradient buckets (see GradientBuckets.h).
#include "runtime/train/GradientBuckets.h"

#include "runtime/core/OptimizerShard.h"
#include "runtime/train/RankSync.h"

#include <chrono>
#include <stdexcept>

namespace gptrt::train {

BackgroundGradientExchange::BackgroundGradientExchange(
    dist::Communicator &comm, std::unique_ptr<BucketMemory> memory)
    : comm_(comm), memory_(std::move(memory)), thread_([this] { run(); }) {}

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
  memory_->markComputeDone();
  std::unique_lock<std::mutex> lock(mutex_);
  changed_.wait(lock, [&] { return queue_.empty() && !busy_; });
  timing_.exposedSeconds += memory_->exposedSeconds();
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
  const int world = comm_.worldSize(), rank = comm_.rank();
  const BucketSlice mine = bucketSlice(job.n, rank, world);
  if (mine.stride == 0)
    return;
  // Each rank sums one slice of the bucket (bucketSlice, ZeRO-1's cut) and
  // sends the sums back, both ways as E4M3: per rank (world - 1) / world of
  // the bucket's element count in bytes each way, a quarter of what a ring
  // all-reduce of f32 sends, at any world size. Each slice's codes travel
  // as a block of whole floats.
  const size_t blockBytes = (static_cast<size_t>(mine.stride) + 3) / 4 * 4;
  const size_t blockWords = blockBytes / 4;
  float *codes = memory_->buffer(kCodes, blockWords * world);
  float *received = memory_->buffer(kGathered, blockWords * world);
  uint8_t *codeBytes = reinterpret_cast<uint8_t *>(codes);
  float *amax = memory_->buffer(kAmax, 2);
  // 1. One scale for all ranks (GradientFp8Scale.h) from the largest
  // magnitude anywhere, so every rank's codes mean the same thing (NaN
  // stays NaN through the max); each slice's codes go to its owner, which
  // sums them in f32, rank 0's first.
  memory_->amax(job.grads, static_cast<size_t>(job.n), amax);
  comm_.allReduceMax(amax, 1);
  for (int r = 0; r < world; ++r) {
    const BucketSlice slice = bucketSlice(job.n, r, world);
    memory_->encodeE4M3(job.grads + slice.begin,
                        static_cast<size_t>(slice.count), amax,
                        codeBytes + static_cast<size_t>(r) * blockBytes);
  }
  comm_.allToAll(codes, received, blockWords);
  float *sums = job.grads + mine.begin;
  memory_->decodeSumE4M3(reinterpret_cast<const uint8_t *>(received), world,
                         blockBytes, static_cast<size_t>(mine.count), amax,
                         sums);
  // ZeRO-1 stops here: the owner keeps its f32 sums, the optimizer reads
  // only those.
  if (job.scatter)
    return;
  // 2. The sums to every rank, as E4M3 under a second shared scale (the
  // owner too takes the decoded values, so every rank holds the same bits),
  // gathered in place.
  float *amaxOfSums = amax + 1;
  memory_->amax(sums, static_cast<size_t>(mine.count), amaxOfSums);
  comm_.allReduceMax(amaxOfSums, 1);
  float *myBlock = codes + static_cast<size_t>(rank) * blockWords;
  memory_->encodeE4M3(sums, static_cast<size_t>(mine.count), amaxOfSums,
                      reinterpret_cast<uint8_t *>(myBlock));
  comm_.allGather(myBlock, codes, blockWords);
  for (int r = 0; r < world; ++r) {
    const BucketSlice slice = bucketSlice(job.n, r, world);
    memory_->decodeSumE4M3(codeBytes + static_cast<size_t>(r) * blockBytes, 1,
                           blockBytes, static_cast<size_t>(slice.count),
                           amaxOfSums, job.grads + slice.begin);
  }
}

void BackgroundGradientExchange::scatterSum(const Job &job) {
  const int world = comm_.worldSize(), rank = comm_.rank();
  const BucketSlice mine = bucketSlice(job.n, rank, world);
  if (mine.stride == 0)
    return;
  // Padded to equal slices in a copy: in place, the padding would be the
  // next bucket's gradients, which the backward may still be writing.
  const size_t n = static_cast<size_t>(job.n);
  const size_t padded = static_cast<size_t>(mine.stride) * world;
  float *staging = memory_->buffer(kStaging, padded);
  memory_->copy(staging, job.grads, n);
  memory_->fillZero(staging + n, padded - n);
  float *slice = staging + static_cast<size_t>(rank) * mine.stride;
  comm_.reduceScatterSum(staging, slice, padded);
  memory_->copy(job.grads + mine.begin, slice, static_cast<size_t>(mine.count));
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
  float *gathered = memory_->buffer(kParams, local * comm_.worldSize());
  float *mine = gathered + local * static_cast<size_t>(comm_.rank());
  for (const OptimizerShard::Range &r : shard.owned())
    memory_->copy(mine + r.localBegin, params + r.gradBegin,
                  static_cast<size_t>(r.count));
  comm_.allGather(mine, gathered, local);
  for (const OptimizerShard::Placement &p : shard.placements(local))
    memory_->copy(params + p.to, gathered + p.from, p.count);
  memory_->complete();
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
    double seconds = 0;
    try {
      // Buckets go in the order they are started, the same on every rank,
      // so the collectives match up.
      comm_.waitForDeviceEvent(job.ready);
      memory_->startTiming();
      if (job.fp8Format >= 0)
        sumAsFp8(job);  // reduce-scattered too, under ZeRO-1
      else if (job.scatter)
        scatterSum(job);
      else
        comm_.allReduceSum(job.grads, static_cast<size_t>(job.n));
      // The bucket is in place when finish() sees the job done.
      seconds = memory_->stopTiming();
    } catch (const std::exception &e) {
      error = "summing gradient bucket " + std::to_string(job.bucket) +
              " across ranks failed: " + e.what();
    }
    lock.lock();
    timing_.busySeconds += seconds;
    busy_ = false;
    if (!error.empty() && error_.empty())
      error_ = error;
    changed_.notify_all();
  }
}

} // namespace gptrt::train
