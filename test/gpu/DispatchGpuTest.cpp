// Dispatch on a CUDA context: the step scalar lands in device memory, and
// the device describes itself.
#include "test/gpu/GpuTestUtil.h"

#include <gmock/gmock.h>

namespace gptrt::gputest {
namespace {

TEST_F(GpuTest, StepScalarWritesDeviceMemory) {
  float *p = alloc<float>(1);
  gpu().setLearningRate(0.125f);
  gptrt_step_scalar(g(), p, 1);
  expectOk();
  EXPECT_EQ(download(p, 1)[0], 0.125f);
}

TEST_F(GpuTest, ReportsTheDevice) {
  const std::string d = dev().description();
  std::printf("GPU under test: %s\n", d.c_str());
  EXPECT_GE(dev().computeCapability(), 50);
}

} // namespace
} // namespace gptrt::gputest
