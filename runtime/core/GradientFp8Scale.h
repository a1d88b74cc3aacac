// The shared scale of an FP8 gradient bucket (gpt-data-parallel
// grad-comm=fp8): every rank sends its gradients as E4M3 codes of
// x * scale, with one scale from the largest magnitude on any rank, and
// every rank sums the decoded values in f32. One definition for the CPU's
// exchange and the CUDA kernels, so that both round alike.
#ifndef GPTRT_CORE_GRADIENTFP8SCALE_H
#define GPTRT_CORE_GRADIENTFP8SCALE_H

#if defined(__CUDACC__)
#define GPTRT_HOST_DEVICE __host__ __device__
#else
#define GPTRT_HOST_DEVICE
#endif

namespace gptrt {

// 448 is E4M3's largest finite value (OCP 8-bit floating point
// specification). An amax of zero, infinity or NaN gives 1: nothing to
// scale, or nothing a scale could rescue (the codes then carry the NaN or
// saturate). Summed in f32 after the transfer, so -- unlike a sum in FP8
// (FP8-LM) -- no pre-division by the world size is needed to stay in range.
GPTRT_HOST_DEVICE inline float gradientFp8Scale(float amax) {
  return amax > 0.0f && amax <= 3.40282347e38f ? 448.0f / amax : 1.0f;
}

} // namespace gptrt

#endif // GPTRT_CORE_GRADIENTFP8SCALE_H
