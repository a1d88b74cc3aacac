// The optimizer's kernels: global gradient norm (two deterministic passes,
// partial sums in double as the CPU reference), the clip coefficient and
// AdamW. Learning rate, step and gradient scale are read on the device,
// so a captured step replays with new values (DESIGN.md section 5).
#include "runtime/cuda/DeviceImpl.h"
#include "runtime/cuda/Reduce.cuh"

namespace gptrt::cuda {

namespace {

constexpr int kNormBlocks = 1024;

__global__ void sumSquaresKernel(const float *x, int64_t n, double *partial) {
  double s = 0;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    double v = x[i];
    s += v * v;
  }
  s = blockSum(s);
  if (threadIdx.x == 0)
    partial[blockIdx.x] = s;
}

__global__ void normKernel(const double *partial, int blocks, float *out) {
  double s = 0;
  for (int i = threadIdx.x; i < blocks; i += blockDim.x)
    s += partial[i];
  s = blockSum(s);
  if (threadIdx.x == 0)
    *out = float(sqrt(s));
}

// As gptrt_clip_scale on the CPU (torch.nn.utils.clip_grad_norm_'s f32
// operations, a NaN norm kept visible).
__global__ void clipScaleKernel(const float *norm, float *out,
                                float maxNorm) {
  if (maxNorm <= 0.0f) {
    *out = 1.0f;
    return;
  }
  const float denom = __fadd_rn(*norm, 1e-6f);
  const float coef = __fmul_rn(__frcp_rn(denom), maxNorm);
  *out = isnan(coef) ? coef : fminf(coef, 1.0f);
}

// PyTorch's AdamW, operation for operation as runtime/cpu/Kernels.cpp
// (whose comments give the torch op of each line); the explicit _rn
// intrinsics stop nvcc from contracting into FMAs the CPU does not do.
__global__ void adamwKernel(const float *grad, const float *gradScale,
                            const float *lrPtr, const float *stepPtr,
                            float *param, float *m, float *v, int64_t n,
                            double beta1, double beta2, double eps,
                            double weightDecay) {
  __shared__ float sh[4];
  if (threadIdx.x == 0) {
    const double lr = *lrPtr, step = *stepPtr;
    const double bc1 = 1.0 - pow(beta1, step);
    const double bc2 = 1.0 - pow(beta2, step);
    sh[0] = float(1.0 - lr * weightDecay);
    sh[1] = float(-(lr / bc1));
    sh[2] = float(sqrt(bc2));
    sh[3] = *gradScale;
  }
  __syncthreads();
  const float decay = sh[0], negStepSize = sh[1], bc2Sqrt = sh[2];
  const float gs = sh[3];
  const float b1 = float(beta1), oneMinusB1 = float(1.0 - beta1);
  const float b2 = float(beta2), oneMinusB2 = float(1.0 - beta2);
  const float epsF = float(eps);
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    const float g = __fmul_rn(grad[i], gs);
    const float p = __fmul_rn(param[i], decay);
    const float mi = __fmaf_rn(g, oneMinusB1, __fmul_rn(m[i], b1));
    const float vi =
        __fmaf_rn(__fmul_rn(oneMinusB2, g), g, __fmul_rn(v[i], b2));
    const float denom = __fadd_rn(__fdiv_rn(__fsqrt_rn(vi), bc2Sqrt), epsF);
    param[i] = __fadd_rn(p, __fdiv_rn(__fmul_rn(negStepSize, mi), denom));
    m[i] = mi;
    v[i] = vi;
  }
}

} // namespace

void DeviceImpl::globalNorm(const float *x, float *out, int64_t n) {
  double *partial =
      static_cast<double *>(scratch(kNormBlocks * sizeof(double)));
  sumSquaresKernel<<<kNormBlocks, 256, 0, stream_>>>(x, n, partial);
  checkLaunch("gptrt_global_norm");
  normKernel<<<1, 1024, 0, stream_>>>(partial, kNormBlocks, out);
  checkLaunch("gptrt_global_norm (final)");
}

void DeviceImpl::clipScale(const float *norm, float *out, float maxNorm) {
  clipScaleKernel<<<1, 1, 0, stream_>>>(norm, out, maxNorm);
  checkLaunch("gptrt_clip_scale");
}

void DeviceImpl::adamw(const float *grad, const float *gradScale,
                       const float *lr, const float *step, float *param,
                       float *m, float *v, int64_t n, double beta1,
                       double beta2, double eps, double weightDecay) {
  if (n <= 0)
    return;
  adamwKernel<<<gridFor(n), 256, 0, stream_>>>(grad, gradScale, lr, step,
                                               param, m, v, n, beta1, beta2,
                                               eps, weightDecay);
  checkLaunch("gptrt_adamw");
}

} // namespace gptrt::cuda
