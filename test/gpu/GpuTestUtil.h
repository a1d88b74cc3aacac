// Shared fixture of the GPU tests: one CUDA Context for the whole binary
// (its single arena is a bump allocator the tests carve device buffers
// from), fresh random inputs per test, NaN-poisoned outputs, host<->device
// copies and the norm-wise relative error of DESIGN.md section 7 / the
// device notes' METHOD.md. Every test SKIPS, with the reason, where no CUDA
// device can be opened (or the runtime was built without CUDA).
#ifndef GPTC_TEST_GPU_GPUTESTUTIL_H
#define GPTC_TEST_GPU_GPUTESTUTIL_H

#include "runtime/abi/gptrt.h"
#include "runtime/core/Context.h"
#include "runtime/cpu/Bf16.h"
#include "runtime/cuda/Backend.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <vector>

namespace gptrt::gputest {

// One arena of this many bytes holds every device buffer of a test.
constexpr uint64_t kArenaBytes = uint64_t(1) << 30;

struct Shared {
  std::unique_ptr<Context> ctx;
  std::string why;  // why there is no context
};

inline Shared &shared() {
  static Shared s = [] {
    Shared r;
    try {
      r.ctx = std::make_unique<Context>(Device::Cuda,
                                        std::vector<ArenaSpec>{
                                            {"gpu-test", kArenaBytes, 256}});
    } catch (const std::exception &e) {
      r.why = e.what();
    }
    return r;
  }();
  return s;
}

class GpuTest : public ::testing::Test {
protected:
  void SetUp() override {
    Shared &s = shared();
    if (!s.ctx)
      GTEST_SKIP() << "no CUDA device: " << s.why;
    ctx_ = s.ctx.get();
    ctx_->clearError();
    // Options a test that stopped early (a failed ASSERT) may have left on
    // in the shared context.
    if (ctx_->collectingFp8Stats())
      ctx_->endFp8Stats();
    dev().setFlashAttention(false);
    dev().setRowwiseOuterVecScales(false);
    next_ = 0;
    // Fresh inputs every run (METHOD.md); the seed is printed to replay.
    seed_ = std::random_device{}();
    rng_.seed(seed_);
    RecordProperty("seed", std::to_string(seed_));
  }

  Context &gpu() { return *ctx_; }
  gptrt_context *g() { return ctx_->handle(); }
  cuda::Device &dev() { return *ctx_->cudaDevice(); }

  // `count` elements of T in the arena, 256-byte aligned, NaN-poisoned
  // (all bytes 0xFF: a NaN in f32 and in both FP8 formats).
  template <typename T> T *alloc(size_t count) {
    const size_t bytes = count * sizeof(T);
    char *base = static_cast<char *>(ctx_->arenaBase(0));
    if (next_ + bytes > kArenaBytes)
      throw std::runtime_error("GPU test arena exhausted");
    T *p = reinterpret_cast<T *>(base + next_);
    next_ = (next_ + bytes + 255) / 256 * 256;
    std::vector<unsigned char> poison(bytes, 0xFF);
    ctx_->copyIn(p, poison.data(), bytes);
    return p;
  }
  template <typename T> T *upload(const std::vector<T> &host) {
    T *p = alloc<T>(host.size());
    ctx_->copyIn(p, host.data(), host.size() * sizeof(T));
    return p;
  }
  template <typename T> std::vector<T> download(const T *p, size_t count) {
    std::vector<T> host(count);
    ctx_->copyOut(host.data(), p, count * sizeof(T));
    return host;
  }
  // Kernel errors recorded by guarded, then asynchronous ones.
  void expectOk() {
    ASSERT_FALSE(ctx_->failed()) << ctx_->error();
    ASSERT_NO_THROW(ctx_->synchronize());
  }

  std::vector<float> randn(size_t n, float scale = 1.0f) {
    std::normal_distribution<float> d(0.0f, scale);
    std::vector<float> v(n);
    for (float &x : v)
      x = d(rng_);
    return v;
  }
  std::vector<int32_t> randint(size_t n, int32_t lo, int32_t hi) {
    std::uniform_int_distribution<int32_t> d(lo, hi - 1);
    std::vector<int32_t> v(n);
    for (int32_t &x : v)
      x = d(rng_);
    return v;
  }

  Context *ctx_ = nullptr;
  size_t next_ = 0;
  unsigned seed_ = 0;
  std::mt19937 rng_;
};

template <typename T> std::vector<double> toDouble(const std::vector<T> &v) {
  return std::vector<double>(v.begin(), v.end());
}

// bf16 codes of x, rounded to nearest even (runtime/cpu/Bf16.h).
inline std::vector<uint16_t> toBf16(const std::vector<float> &x) {
  std::vector<uint16_t> codes(x.size());
  for (size_t i = 0; i < x.size(); ++i)
    codes[i] = cpu::floatToBf16(x[i]);
  return codes;
}

// The values of bf16 codes. Outputs are poisoned with 0xFFFF (a bf16 NaN)
// before a kernel runs, so an unwritten element reads as NaN and relErr
// reports it as infinitely wrong.
inline std::vector<double> bf16Values(const std::vector<uint16_t> &codes) {
  std::vector<double> values(codes.size());
  for (size_t i = 0; i < codes.size(); ++i)
    values[i] = cpu::bf16ToFloat(codes[i]);
  return values;
}

template <typename T> double normOf(const std::vector<T> &v) {
  double sum = 0;
  for (const T &x : v)
    sum += static_cast<double>(x) * static_cast<double>(x);
  return std::sqrt(sum);
}

// ||got - ref|| / max(||ref||, floor); infinity if got holds a NaN
// anywhere, so unwritten (poisoned) elements always fail. `floor` is for
// results whose terms may cancel (one element summing to nearly 0): each
// rounding's error scales with the terms, not with their sum, so the
// floor is the norm of the terms.
template <typename G>
double relErrAbove(const std::vector<G> &got, const std::vector<double> &ref,
                   double floor) {
  if (got.size() != ref.size())
    return std::numeric_limits<double>::infinity();
  double num = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    if (std::isnan(static_cast<double>(got[i])))
      return std::numeric_limits<double>::infinity();
    double d = static_cast<double>(got[i]) - ref[i];
    num += d * d;
  }
  const double den = std::max(normOf(ref), floor);
  return std::sqrt(num) / (den == 0 ? 1.0 : den);
}

// ||got - ref|| / ||ref|| (||ref|| taken as 1 when it is 0).
template <typename G>
double relErr(const std::vector<G> &got, const std::vector<double> &ref) {
  return relErrAbove(got, ref, 0.0);
}

// Bit for bit, except that any NaN matches any NaN: a GPU's arithmetic
// returns the canonical NaN (0x7FFFFFFF) where x86 keeps its operand's
// (0x7FC00000 for std::nanf), so the scale made of a NaN amax differs in
// its bits alone (the FP8 codes made with it are 0x7F on both).
inline ::testing::AssertionResult
sameBitsOrBothNan(const std::vector<float> &got,
                  const std::vector<float> &want) {
  if (got.size() != want.size())
    return ::testing::AssertionFailure()
           << got.size() << " values, expected " << want.size();
  for (size_t i = 0; i < got.size(); ++i) {
    if (std::isnan(got[i]) && std::isnan(want[i]))
      continue;
    if (std::memcmp(&got[i], &want[i], sizeof(float)) != 0)
      return ::testing::AssertionFailure()
             << "element " << i << ": " << got[i] << ", expected " << want[i];
  }
  return ::testing::AssertionSuccess();
}

// Tolerances of the task (norm-wise, against float64).
constexpr double kF32Tol = 1e-5;
constexpr double kBf16Tol = 1e-2;

} // namespace gptrt::gputest

#endif // GPTC_TEST_GPU_GPUTESTUTIL_H
