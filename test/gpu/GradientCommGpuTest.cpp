// The gradient exchange of GPU workers (runtime/train/BucketMemory's device
// side, GradientComm.cu) against the CPU's, bit for bit: the same bucket
// summed by one NCCL rank with its buckets on the GPU and by one local
// rank with them on the host. World size 1 is what one GPU allows; the
// collectives are identities there, so what is compared is everything
// around them -- the FP8 amax, scale, E4M3 coding and ordered sum, the
// reduce-scatter's padded staging copies -- plus the event timing.
#include "GpuTestUtil.h"

#include "runtime/dist/LocalCommunicator.h"
#include "runtime/dist/NcclCommunicator.h"
#include "runtime/train/GradientBuckets.h"

#include <cstring>

namespace gptrt::gputest {
namespace {

class GradientCommGpuTest : public GpuTest {
protected:
  void SetUp() override {
    GpuTest::SetUp();
    if (IsSkipped())
      return;
    try {
      nccl_ = dist::makeNcclCommunicator(nullptr, 0, 1);
    } catch (const std::exception &e) {
      if (std::strstr(e.what(), "cannot load NCCL"))
        GTEST_SKIP() << e.what();
      throw;
    }
  }

  // Gradients with a spread of magnitudes (none zero), so that the FP8
  // coding rounds most of them, saturates none and underflows a few.
  std::vector<float> gradients(size_t n) {
    std::vector<float> g = randn(n, 1e-3f);
    std::uniform_int_distribution<size_t> at(0, n - 1);
    for (int i = 0; i < 8; ++i)
      g[at(rng_)] *= 1000.0f;
    return g;
  }

  // Sums `host` through the host exchange and the same values uploaded
  // through the device one, as bucket 0 of a step; returns both results.
  std::pair<std::vector<float>, std::vector<float>>
  exchangeBoth(const std::vector<float> &host, int64_t fp8Format, bool scatter,
               double *deviceBusySeconds = nullptr) {
    std::vector<float> onHost = host;
    dist::LocalCommunicator local;
    {
      train::BackgroundGradientExchange exchange(local);
      exchange.start(onHost.data(), static_cast<int64_t>(onHost.size()), 0,
                     fp8Format, scatter, nullptr);
      exchange.finish(1);
    }
    float *grads = upload(host);
    train::BackgroundGradientExchange exchange(
        *nccl_, train::deviceBucketMemory(dev(), nccl_->deviceStream()));
    exchange.start(grads, static_cast<int64_t>(host.size()), 0, fp8Format,
                   scatter, dev().recordBucketEvent(0));
    exchange.finish(1);
    if (deviceBusySeconds)
      *deviceBusySeconds = exchange.takeTiming().busySeconds;
    return {onHost, download(grads, host.size())};
  }

  std::unique_ptr<dist::Communicator> nccl_;
};

TEST_F(GradientCommGpuTest, Fp8BucketOnTheGpuEqualsTheCpusBitForBit) {
  // Not a multiple of 4: the codes travel packed four to a float.
  const std::vector<float> g = gradients(100003);
  auto [cpu, gpu] = exchangeBoth(g, GPTRT_FP8_E4M3, false);
  size_t rounded = 0;
  for (size_t i = 0; i < g.size(); ++i) {
    ASSERT_EQ(std::memcmp(&cpu[i], &gpu[i], sizeof(float)), 0)
        << "element " << i << ": cpu " << cpu[i] << " gpu " << gpu[i]
        << " (sent " << g[i] << ")";
    rounded += cpu[i] != g[i];
  }
  // The bucket really went through E4M3: most values changed a little.
  EXPECT_GT(rounded, g.size() / 2);
  EXPECT_LT(relErr(gpu, toDouble(g)), 0.1);
}

TEST_F(GradientCommGpuTest, ScatteredAndF32BucketsOnTheGpuEqualTheCpus) {
  const std::vector<float> g = gradients(4099);
  for (bool scatter : {true, false}) {
    double busy = -1;
    auto [cpu, gpu] = exchangeBoth(g, -1, scatter, &busy);
    EXPECT_EQ(std::memcmp(cpu.data(), gpu.data(), g.size() * sizeof(float)), 0)
        << (scatter ? "reduce-scattered" : "all-reduced");
    // One rank: the sums are the values sent.
    EXPECT_EQ(std::memcmp(gpu.data(), g.data(), g.size() * sizeof(float)), 0);
    // Timed on the stream with events: less than a second, and some time
    // where the exchange copies (one rank's in-place all-reduce may leave
    // NCCL nothing to do, and back-to-back events may read 0).
    EXPECT_GE(busy, 0.0);
    if (scatter)
      EXPECT_GT(busy, 0.0);
    EXPECT_LT(busy, 1.0);
  }
}

TEST_F(GradientCommGpuTest, NanInAnFp8BucketStaysNanAndTheRestAgrees) {
  // A NaN amax gives scale 1 (GradientFp8Scale.h): the NaN element stays
  // NaN, the others are coded unscaled, alike on both sides.
  std::vector<float> g = gradients(1024);
  g[17] = std::numeric_limits<float>::quiet_NaN();
  auto [cpu, gpu] = exchangeBoth(g, GPTRT_FP8_E4M3, false);
  EXPECT_TRUE(std::isnan(cpu[17]));
  EXPECT_TRUE(std::isnan(gpu[17]));
  for (size_t i = 0; i < g.size(); ++i)
    if (i != 17)
      ASSERT_EQ(std::memcmp(&cpu[i], &gpu[i], sizeof(float)), 0)
          << "element " << i << ": cpu " << cpu[i] << " gpu " << gpu[i];
}

} // namespace
} // namespace gptrt::gputest
