// The runtime side of gpt-data-parallel: the compiled train_step hands
// buckets of finished gradients to this exchange (gptrt_grad_bucket_ready),
// which sums each across ranks on a communication thread while the
// backward goes on, and waits for them at the end of the step
// (gptrt_grad_sync).
#ifndef GPTRT_TRAIN_GRADIENTBUCKETS_H
#define GPTRT_TRAIN_GRADIENTBUCKETS_H

#include "runtime/core/Context.h"
#include "runtime/dist/Communicator.h"

#include <condition_variable>
#include <deque>
#include <mutex>
#include <string>
#include <thread>

namespace gptrt::train {

class BackgroundGradientExchange : public GradientExchange {
public:
  explicit BackgroundGradientExchange(dist::Communicator &comm);
  ~BackgroundGradientExchange() override;

  void start(float *grads, int64_t n, int64_t bucket,
             int64_t fp8Format) override;
  void finish(int64_t buckets) override;

private:
  struct Job {
    float *grads;
    int64_t n, bucket, fp8Format;
  };
  void run();
  // One bucket as FP8: shared scale, all-gather of the codes, f32 sum.
  void sumAsFp8(const Job &job);

  dist::Communicator &comm_;
  std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<Job> queue_;
  bool busy_ = false, stopping_ = false;
  int64_t started_ = 0;
  std::string error_;
  std::thread thread_;  // last: starts once the members above exist
};

} // namespace gptrt::train

#endif // GPTRT_TRAIN_GRADIENTBUCKETS_H
