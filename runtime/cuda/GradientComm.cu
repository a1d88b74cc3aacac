// The device side of FP8 gradient communication and of the exchange's
// copies (Backend.h, "gradient communication"): kernels launched on the
// communicator's stream by the exchange's thread. The E4M3 coding is the
// one runtime/train's CPU exchange does, bit for bit: the same scale
// (GradientFp8Scale.h), one rounded f32 multiply, CUDA's saturating
// conversion (which runtime/cpu/Fp8.h emulates), and sums in rank order.
#include "runtime/abi/gptrt.h"
#include "runtime/core/GradientFp8Scale.h"
#include "runtime/cuda/DeviceImpl.h"
#include "runtime/cuda/Fp8Codes.cuh"

#include <cuda_fp8.h>

namespace gptrt::cuda {

namespace {

cudaStream_t asStream(void *stream) {
  return static_cast<cudaStream_t>(stream);
}

__global__ void gradientEncodeKernel(const float *x, int64_t n,
                                     const float *amax, uint8_t *codes) {
  const float scale = gradientFp8Scale(*amax);
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x)
    codes[i] = toFp8<__NV_E4M3>(__fmul_rn(x[i], scale));
}

__device__ float decodeE4M3(uint8_t code) {
  __half_raw h = __nv_cvt_fp8_to_halfraw(code, __NV_E4M3);
  return __half2float(__half(h));
}

__global__ void gradientDecodeSumKernel(const uint8_t *codes, int64_t ranks,
                                        int64_t stride, int64_t n,
                                        const float *amax, float *x) {
  const float scale = gradientFp8Scale(*amax);
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    float sum = 0.0f;
    for (int64_t r = 0; r < ranks; ++r)
      sum = __fadd_rn(sum, __fdiv_rn(decodeE4M3(codes[r * stride + i]), scale));
    x[i] = sum;
  }
}

} // namespace

void DeviceImpl::copyOnStream(void *stream, void *dst, const void *src,
                              size_t bytes) {
  if (bytes > 0)
    check(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, asStream(stream)),
          "cudaMemcpyAsync (gradient exchange)");
}

void DeviceImpl::zeroOnStream(void *stream, void *dst, size_t bytes) {
  if (bytes > 0)
    check(cudaMemsetAsync(dst, 0, bytes, asStream(stream)),
          "cudaMemsetAsync (gradient exchange)");
}

void DeviceImpl::synchronizeStream(void *stream) {
  check(cudaStreamSynchronize(asStream(stream)),
        "the gradient exchange's stream");
}

void *DeviceImpl::newTimingEvent() {
  cudaEvent_t event = nullptr;
  check(cudaEventCreate(&event), "cudaEventCreate (timing)");
  return event;
}

void DeviceImpl::deleteTimingEvent(void *event) {
  if (event)
    cudaEventDestroy(static_cast<cudaEvent_t>(event));
}

void DeviceImpl::recordTimingEvent(void *event, void *stream) {
  check(cudaEventRecord(static_cast<cudaEvent_t>(event),
                        stream ? asStream(stream) : stream_),
        "cudaEventRecord (timing)");
}

double DeviceImpl::secondsBetween(void *from, void *to) {
  check(cudaEventSynchronize(static_cast<cudaEvent_t>(from)),
        "cudaEventSynchronize (timing)");
  check(cudaEventSynchronize(static_cast<cudaEvent_t>(to)),
        "cudaEventSynchronize (timing)");
  float ms = 0;
  check(cudaEventElapsedTime(&ms, static_cast<cudaEvent_t>(from),
                             static_cast<cudaEvent_t>(to)),
        "cudaEventElapsedTime");
  return ms * 1e-3;
}

void DeviceImpl::gradientAmax(void *stream, const float *x, int64_t n,
                              float *amax) {
  launchAmax(x, GPTRT_DTYPE_F32, amax, n, asStream(stream), "gradient amax");
}

void DeviceImpl::gradientEncodeE4M3(void *stream, const float *x, int64_t n,
                                    const float *amax, uint8_t *codes) {
  if (n <= 0)
    return;
  gradientEncodeKernel<<<gridFor(n), 256, 0, asStream(stream)>>>(x, n, amax,
                                                                 codes);
  checkLaunch("gradient FP8 encode");
}

void DeviceImpl::gradientDecodeSumE4M3(void *stream, const uint8_t *codes,
                                       int64_t ranks, int64_t stride, int64_t n,
                                       const float *amax, float *x) {
  if (n <= 0)
    return;
  if (ranks < 1 || stride < n)
    throw std::invalid_argument(
        "gradient FP8 sum over " + std::to_string(ranks) + " ranks of " +
        std::to_string(n) + " codes " + std::to_string(stride) +
        " apart: expected ranks >= 1 and stride >= n");
  gradientDecodeSumKernel<<<gridFor(n), 256, 0, asStream(stream)>>>(
      codes, ranks, stride, n, amax, x);
  checkLaunch("gradient FP8 decode and sum");
}

} // namespace gptrt::cuda
