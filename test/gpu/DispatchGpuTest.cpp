// Dispatch on a CUDA context: a gptrt_* function without a CUDA kernel
// records an error naming itself (it never runs its CPU body on device
// pointers), and the step scalar lands in device memory.
#include "test/gpu/GpuTestUtil.h"

#include <gmock/gmock.h>

namespace gptrt::gputest {
namespace {

TEST_F(GpuTest, MissingKernelIsAnErrorNamingIt) {
  float *p = alloc<float>(64);
  gptrt_amax_rows(g(), p, p, 4, 4, 0, GPTRT_DTYPE_F32);
  EXPECT_THAT(gpu().error(),
              ::testing::StartsWith("gptrt_amax_rows has no CUDA kernel yet"));
  gpu().clearError();
  gptrt_row_scales(g(), p, p, 4, 448.0, 0, 0, 1e-12);
  EXPECT_THAT(gpu().error(), ::testing::StartsWith(
                                 "gptrt_row_scales has no CUDA kernel yet"));
  gpu().clearError();
}

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
