// The runtime side of gpt-data-parallel: the compiled train_step hands
// buckets of finished gradients to this exchange (gptrt_grad_bucket_ready),
// which sums each across ranks on a communication thread while the
// backward goes on, and waits for them at the end of the step
// (gptrt_grad_sync). Under ZeRO-1 the buckets are reduce-scattered, and the
// sharded optimizer step sums its norm and gathers the parameters through
// the same communicator, on the caller's thread.
#ifndef GPTRT_TRAIN_GRADIENTBUCKETS_H
#define GPTRT_TRAIN_GRADIENTBUCKETS_H

#include "runtime/core/Context.h"
#include "runtime/dist/Communicator.h"
#include "runtime/train/BucketMemory.h"

#include <condition_variable>
#include <deque>
#include <mutex>
#include <string>
#include <thread>

namespace gptrt::train {

class BackgroundGradientExchange : public GradientExchange {
public:
  // Buckets in host memory (CPU ranks) by default; GPU workers pass
  // deviceBucketMemory on the communicator's stream.
  explicit BackgroundGradientExchange(
      dist::Communicator &comm,
      std::unique_ptr<BucketMemory> memory = hostBucketMemory());
  ~BackgroundGradientExchange() override;

  void start(float *grads, int64_t n, int64_t bucket, int64_t fp8Format,
             bool scatter, void *ready) override;
  void finish(int64_t buckets) override;
  double sumOverRanks(double local) override;
  void gatherParams(float *params, const OptimizerShard &shard) override;

  // Communication time since the last call: `busy` is what the collectives
  // took in all (on the communication thread or stream, overlapping the
  // backward), `exposed` how much of it the step waited for: on the CPU
  // how long the training thread blocked in finish() (including its
  // wake-up), on a GPU how long after the backward's last kernel the last
  // bucket was done; plus the sharded optimizer's sum and gather.
  struct Timing {
    double busySeconds = 0, exposedSeconds = 0;
  };
  Timing takeTiming();

private:
  struct Job {
    float *grads;
    int64_t n, bucket, fp8Format;
    bool scatter;
    void *ready;  // see GradientExchange::start
  };
  void run();
  // One bucket as FP8: shared scale, each slice's codes to its owner, f32
  // sums there, and (unless scattered) the sums back to all as FP8.
  void sumAsFp8(const Job &job);
  // One bucket reduce-scattered: this rank's slice gets the sums.
  void scatterSum(const Job &job);

  // memory_'s buffer slots: kParams is the training thread's
  // (gatherParams, after finish()), the others the exchange thread's.
  enum Slot { kStaging, kAmax, kCodes, kGathered, kParams };

  dist::Communicator &comm_;
  std::unique_ptr<BucketMemory> memory_;
  std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<Job> queue_;
  bool busy_ = false, stopping_ = false;
  int64_t started_ = 0;
  std::string error_;
  Timing timing_;               // guarded by mutex_
  std::thread thread_;  // last: starts once the members above exist
};

} // namespace gptrt::train

#endif // GPTRT_TRAIN_GRADIENTBUCKETS_H
