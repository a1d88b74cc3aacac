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

// One AdamW update with the step's constants, shared by the scalar and
// the vector kernel so that both compute the same bits.
struct AdamwStep {
  // param's factor for decayed elements and for the others (weight decay
  // 0: 1 - lr * 0, as gptrt_adamw with weight_decay 0 works it out).
  float decay, plainDecay, negStepSize, bc2Sqrt, gradScale;
  float b1, oneMinusB1, b2, oneMinusB2, eps;

  // PyTorch's AdamW, operation for operation as runtime/cpu/Kernels.cpp
  // (whose comments give the torch op of each line); the explicit _rn
  // intrinsics stop nvcc from contracting into FMAs the CPU does not do.
  __device__ void apply(float grad, float &param, float &m, float &v,
                        bool decays) const {
    const float g = __fmul_rn(grad, gradScale);
    const float p = __fmul_rn(param, decays ? decay : plainDecay);
    const float mi = __fmaf_rn(g, oneMinusB1, __fmul_rn(m, b1));
    const float vi = __fmaf_rn(__fmul_rn(oneMinusB2, g), g, __fmul_rn(v, b2));
    const float denom = __fadd_rn(__fdiv_rn(__fsqrt_rn(vi), bc2Sqrt), eps);
    param = __fadd_rn(p, __fdiv_rn(__fmul_rn(negStepSize, mi), denom));
    m = mi;
    v = vi;
  }
};

// The step's constants, from the learning rate and step count in device
// memory (CUDA graphs replay them), worked out once per block.
__device__ AdamwStep adamwStep(const float *gradScale, const float *lrPtr,
                               const float *stepPtr, double beta1, double beta2,
                               double eps, double weightDecay) {
  __shared__ float sh[5];
  if (threadIdx.x == 0) {
    const double lr = *lrPtr, step = *stepPtr;
    const double bc1 = 1.0 - pow(beta1, step);
    const double bc2 = 1.0 - pow(beta2, step);
    sh[0] = float(1.0 - lr * weightDecay);
    sh[1] = float(1.0 - lr * 0.0);
    sh[2] = float(-(lr / bc1));
    sh[3] = float(sqrt(bc2));
    sh[4] = *gradScale;
  }
  __syncthreads();
  return AdamwStep{sh[0],
                   sh[1],
                   sh[2],
                   sh[3],
                   sh[4],
                   float(beta1),
                   float(1.0 - beta1),
                   float(beta2),
                   float(1.0 - beta2),
                   float(eps)};
}

// Whether element i lies in one of decay's ranges: an odd number of its
// ascending bounds are <= i. The table is a kernel parameter (constant
// memory); a warp's elements mostly take one path through the search.
__device__ bool decays(const AdamwDecay &decay, int64_t i) {
  int lo = 0, hi = int(2 * decay.count);
  while (lo < hi) {
    const int mid = (lo + hi) / 2;
    if (decay.bounds[mid] <= i)
      lo = mid + 1;
    else
      hi = mid;
  }
  return (lo & 1) != 0;
}

// Elements [first, first + n) of the call (decay's indices count from the
// call's first element).
__global__ void adamwKernel(const float *grad, const float *gradScale,
                            const float *lrPtr, const float *stepPtr,
                            float *param, float *m, float *v, int64_t first,
                            int64_t n, double beta1, double beta2, double eps,
                            double weightDecay,
                            const __grid_constant__ AdamwDecay decay) {
  const AdamwStep step =
      adamwStep(gradScale, lrPtr, stepPtr, beta1, beta2, eps, weightDecay);
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x)
    step.apply(grad[i], param[i], m[i], v[i], decays(decay, first + i));
}

// The same over n4 groups of four elements in 16-byte accesses (all four
// buffers 16-byte aligned, as the host checks); the host runs the scalar
// kernel on the tail.
__global__ void adamw4Kernel(const float4 *grad, const float *gradScale,
                             const float *lrPtr, const float *stepPtr,
                             float4 *param, float4 *m, float4 *v, int64_t n4,
                             double beta1, double beta2, double eps,
                             double weightDecay,
                             const __grid_constant__ AdamwDecay decay) {
  const AdamwStep step =
      adamwStep(gradScale, lrPtr, stepPtr, beta1, beta2, eps, weightDecay);
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n4;
       i += int64_t(gridDim.x) * blockDim.x) {
    const float4 g = grad[i];
    float4 p = param[i], mi = m[i], vi = v[i];
    const int64_t e = 4 * i;
    step.apply(g.x, p.x, mi.x, vi.x, decays(decay, e));
    step.apply(g.y, p.y, mi.y, vi.y, decays(decay, e + 1));
    step.apply(g.z, p.z, mi.z, vi.z, decays(decay, e + 2));
    step.apply(g.w, p.w, mi.w, vi.w, decays(decay, e + 3));
    param[i] = p;
    m[i] = mi;
    v[i] = vi;
  }
}

bool aligned16(const void *p) {
  return reinterpret_cast<uintptr_t>(p) % 16 == 0;
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
                       double beta2, double eps, double weightDecay,
                       const AdamwDecay &decay) {
  if (n <= 0)
    return;
  int64_t done = 0;
  if (aligned16(grad) && aligned16(param) && aligned16(m) && aligned16(v) &&
      n >= 4) {
    const int64_t n4 = n / 4;
    adamw4Kernel<<<gridFor(n4), 256, 0, stream_>>>(
        reinterpret_cast<const float4 *>(grad), gradScale, lr, step,
        reinterpret_cast<float4 *>(param), reinterpret_cast<float4 *>(m),
        reinterpret_cast<float4 *>(v), n4, beta1, beta2, eps, weightDecay,
        decay);
    checkLaunch("gptrt_adamw");
    done = 4 * n4;
    if (done == n)
      return;
  }
  adamwKernel<<<gridFor(n - done), 256, 0, stream_>>>(
      grad + done, gradScale, lr, step, param + done, m + done, v + done, done,
      n - done, beta1, beta2, eps, weightDecay, decay);
  checkLaunch("gptrt_adamw");
}

} // namespace gptrt::cuda
