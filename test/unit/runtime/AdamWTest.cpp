// AdamW against a double reference written from torch.optim.AdamW's
// _single_tensor_adamw (PyTorch 1.13, amsgrad=False), plus properties that
// hold for any correct Adam: the first step moves each weight by ~lr, and
// weight decay is decoupled from the gradient.
#include "runtime/cpu/Kernels.h"
#include "test/unit/runtime/TestUtil.h"

#include <cmath>

namespace {

using namespace gptrt::test;
namespace rt = gptrt::cpu;

struct Hyper {
  double lr = 1e-2, beta1 = 0.9, beta2 = 0.95, eps = 1e-8, wd = 0.1;
};

struct State {
  Vec p, m, v;
};

void refAdamW(State &s, const Vec &g, const Hyper &h, int64_t step) {
  const double bc1 = 1 - std::pow(h.beta1, step);
  const double bc2 = 1 - std::pow(h.beta2, step);
  for (size_t i = 0; i < s.p.size(); ++i) {
    s.p[i] *= 1 - h.lr * h.wd;
    s.m[i] = h.beta1 * s.m[i] + (1 - h.beta1) * g[i];
    s.v[i] = h.beta2 * s.v[i] + (1 - h.beta2) * g[i] * g[i];
    s.p[i] -= (h.lr / bc1) * s.m[i] / (std::sqrt(s.v[i]) / std::sqrt(bc2) + h.eps);
  }
}

template <typename T>
void kernelSteps(State &s, const std::vector<Vec> &grads, const Hyper &h) {
  auto p = convert<T>(s.p), m = convert<T>(s.m), v = convert<T>(s.v);
  for (size_t t = 0; t < grads.size(); ++t) {
    auto g = convert<T>(grads[t]);
    rt::adamw(p.data(), g.data(), m.data(), v.data(),
              static_cast<int64_t>(p.size()), h.lr, h.beta1, h.beta2, h.eps,
              h.wd, static_cast<int64_t>(t + 1));
  }
  s = {convert<double>(p), convert<double>(m), convert<double>(v)};
}

TEST(CpuAdamW, MatchesPyTorchFormula) {
  const size_t n = 1013, steps = 5;
  Hyper h;
  State init{floatExact(randomVec(n, 500)), Vec(n, 0.0), Vec(n, 0.0)};
  std::vector<Vec> grads;
  for (size_t t = 0; t < steps; ++t)
    grads.push_back(floatExact(randomVec(n, 510 + t, -0.1, 0.1)));

  State want = init;
  for (size_t t = 0; t < steps; ++t)
    refAdamW(want, grads[t], h, static_cast<int64_t>(t + 1));

  State d = init;
  kernelSteps<double>(d, grads, h);
  EXPECT_REL_NEAR(d.p, want.p, 1e-14);
  EXPECT_REL_NEAR(d.m, want.m, 1e-14);
  EXPECT_REL_NEAR(d.v, want.v, 1e-14);

  // float: every op rounds to float (as PyTorch's float tensors do); five
  // steps keep the drift from the double reference to a few float ulps.
  State f = init;
  kernelSteps<float>(f, grads, h);
  EXPECT_REL_NEAR(f.p, want.p, 1e-6);
  EXPECT_REL_NEAR(f.m, want.m, kFloatTol);
  EXPECT_REL_NEAR(f.v, want.v, kFloatTol);
}

TEST(CpuAdamW, FirstStepMovesByLearningRate) {
  // Step 1 with no decay: m_hat = g and v_hat = g^2, so the step is
  // lr * g / (|g| + eps): lr * sign(g) up to eps / |g|.
  const size_t n = 64;
  Hyper h;
  h.wd = 0;
  Vec g = randomVec(n, 520);
  for (double &x : g)
    x = x < 0 ? x - 0.01 : x + 0.01; // keep |g| >> eps
  State s{randomVec(n, 521), Vec(n, 0.0), Vec(n, 0.0)};
  Vec p0 = s.p;
  kernelSteps<double>(s, {g}, h);
  for (size_t i = 0; i < n; ++i)
    EXPECT_NEAR(p0[i] - s.p[i], h.lr * (g[i] > 0 ? 1 : -1),
                1.01 * h.lr * h.eps / std::abs(g[i]))
        << i;
}

TEST(CpuAdamW, WeightDecayIsDecoupled) {
  // Zero gradient and zero moments: only the decay acts, p *= 1 - lr*wd,
  // and m, v stay zero (coupled L2 decay would have fed wd*p into m).
  const size_t n = 13;
  Hyper h;
  State s{randomVec(n, 530), Vec(n, 0.0), Vec(n, 0.0)};
  Vec want = s.p;
  for (double &x : want)
    x *= 1 - h.lr * h.wd;
  kernelSteps<double>(s, {Vec(n, 0.0)}, h);
  EXPECT_EQ(s.p, want);
  EXPECT_EQ(s.m, Vec(n, 0.0));
  EXPECT_EQ(s.v, Vec(n, 0.0));
}

TEST(CpuAdamW, RejectsStepZero) {
  double p = 1, g = 1, m = 0, v = 0;
  EXPECT_THROW(rt::adamw(&p, &g, &m, &v, 1, 1e-3, 0.9, 0.999, 1e-8, 0.0, 0),
               std::invalid_argument);
}

} // namespace
