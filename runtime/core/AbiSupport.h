// What every Abi*.cpp shares: dispatch (guarded), argument checks, scratch
// temporaries, f32 staging of bf16 operands and FP8 cast statistics, kept
// apart so that each of those files holds one kernel family's gptrt_*.
//
// The extern "C" gptrt_* functions that gptc artifacts call: thin wrappers
// that reach the Context, dispatch to the device's kernels (f32 CPU kernels
// of runtime/cpu today) and turn the kernels' "accumulates" conventions into
// the ABI's "writes" where the two differ.
//
// Nothing may throw out of these functions: their callers are frames of
// compiler-generated code. Every wrapper runs its body under `guarded`, which
// catches, records the first error in the Context and makes later kernel
// calls no-ops; Artifact::run rethrows it once the entry point returns.
#ifndef GPTRT_CORE_ABISUPPORT_H
#define GPTRT_CORE_ABISUPPORT_H

#include "runtime/abi/gptrt.h"

#include "runtime/core/Context.h"
#include "runtime/core/OptimizerShard.h"
#include "runtime/cpu/Bf16.h"
#include "runtime/cpu/Fp8Cast.h"
#include "runtime/cuda/Backend.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <stdexcept>
#include <string>
#include <vector>

// Exported even if the build ever switches to -fvisibility=hidden.
#define GPTRT_EXPORT extern "C" __attribute__((visibility("default")))

namespace gptrt::abi {

using gptrt::Context;
using gptrt::Device;
using gptrt::OptimizerShard;
namespace cpu = gptrt::cpu;

// The CPU FP8 emulation (runtime/cpu/Fp8Cast.h), by the names the ABI
// functions call it.
using cpu::amaxOf;
using cpu::encodeFp8;
using cpu::fp8Decode;
using cpu::fp8Encode;
using cpu::scaleFromAmax;

// Contract violations with no way to continue (no context to record into,
// or a pointer generated code would dereference): one line, then abort.
[[noreturn]] void fatal(const std::string &message);

Context &contextOf(gptrt_context *ctx, const char *fn);

// gptrun --profile-step: while the context profiles, the outermost
// gptrt_* call is timed, however it ends. An exported function made of
// several calls (a base kernel, then its epilogue) opens one around them,
// so that it counts once, under its own name.
class TimedCall {
public:
  TimedCall(Context &c, const char *fn) : c_(c.profiling() ? &c : nullptr) {
    if (c_)
      c_->enterProfiledCall(fn);
  }
  TimedCall(gptrt_context *ctx, const char *fn)
      : TimedCall(contextOf(ctx, fn), fn) {}
  ~TimedCall() {
    if (c_)
      c_->leaveProfiledCall();
  }
  TimedCall(const TimedCall &) = delete;
  TimedCall &operator=(const TimedCall &) = delete;

private:
  Context *c_;
};

// Dispatch: `body` runs on Device::Cpu; `cudaBody(c, gpu)` on Device::Cuda.
// Every exported function has both: the CPU body would dereference device
// pointers, so a function without a CUDA body does not compile.
template <typename Body, typename CudaBody>
void guarded(gptrt_context *ctx, const char *fn, Body &&body,
             CudaBody &&cudaBody) {
  Context &c = contextOf(ctx, fn);
  if (c.failed())
    return;
  const TimedCall timed(c, fn);
  try {
    if (c.device() == Device::Cuda) {
      cudaBody(c, *c.cudaDevice());
      return;
    }
    body(c);
  } catch (const std::exception &e) {
    c.recordError(std::string(fn) + ": " + e.what());
  } catch (...) {
    c.recordError(std::string(fn) + ": unknown exception");
  }
}

using Gpu = gptrt::cuda::Device;
static_assert(gptrt::cuda::kAccumulateF32 == GPTRT_DTYPE_F32_ACCUMULATE,
              "the CUDA backend's accumulating dtype is gptrt.h's");

// The CPU kernels' large temporaries, each in a scratch slot of its own
// (Context::scratch; slot 0 is the general scratch the kernels they call
// use): a fresh std::vector per call page-faulted and zeroed its memory on
// every call (a third of an FP8 training step on the CPU, by `perf
// record`). Contents are unspecified: each user writes all it reads. A
// purpose is never in use twice at once -- none of the calls that take
// one reach another call taking the same one.
enum class Temporary : unsigned {
  GemmResult = 1, // gptrt_gemm accumulating into c
  GemmProduct,    // gptrt_gemm: the product an FP8 bias or a dGELU reads
  Fp8OperandA,    // fp8GemmUnscaled's decoded operands
  Fp8OperandB,
  LayerNormDx,    // gptrt_layernorm_bwd_add's dx
  ProducerOutput, // the _cast_dual producers' output
  Widened,        // runEpilogue's bf16 output widened
};
static_assert(static_cast<unsigned>(Temporary::Widened) <
                  Context::kScratchSlots,
              "every temporary has a scratch slot of its own");

float *temporary(Context &c, Temporary purpose, int64_t floats);

void requireNonNegative(int64_t v, const char *name);

// The amax output of an _amax kernel: one float, which the kernel writes
// (a null one would be a silently skipped reduction on a GPU).
void requireAmax(const float *amax);

void requireFlag(int64_t flag, const char *name);

void requireStorageDtype(int64_t dtype, const char *name);

// A parameter gradient's output: a storage dtype, or f32 added into
// (GPTRT_DTYPE_F32_ACCUMULATE).
void requireGradientDtype(int64_t dtype, const char *name);

void requireFormat(int64_t format);

// One operand of a kernel with a dtype per operand (see gptrt.h).
struct StorageOperand {
  const void *data;
  int64_t dtype;
  int64_t count;  // elements
  bool output;
  const char *name;  // of the dtype argument, for errors
  // A parameter gradient's output, which may be GPTRT_DTYPE_F32_ACCUMULATE.
  bool gradient = false;
};

// f32 views of f32-or-bf16 operands for the CPU's f32 kernels: a bf16
// input is widened into scratch, a bf16 output computed in scratch and
// rounded once by finish(). Widening is exact, so this is bit for bit the
// f32 kernel between gptrt_convert calls, which is what the ABI promises.
// A gradient output of GPTRT_DTYPE_F32_ACCUMULATE is computed in zeroed
// scratch and added into its f32 buffer by finish().
class F32Staging {
public:
  F32Staging(Context &ctx, std::initializer_list<StorageOperand> operands)
      : operands_(operands) {
    size_t total = 0;
    for (const StorageOperand &o : operands_) {
      if (o.output && o.gradient)
        requireGradientDtype(o.dtype, o.name);
      else
        requireStorageDtype(o.dtype, o.name);
      requireNonNegative(o.count, "element count");
      if (o.dtype != GPTRT_DTYPE_F32)
        total += static_cast<size_t>(o.count);
    }
    float *next = total ? ctx.scratch(total) : nullptr;
    for (const StorageOperand &o : operands_) {
      if (o.dtype == GPTRT_DTYPE_F32) {
        views_.push_back(static_cast<float *>(const_cast<void *>(o.data)));
        continue;
      }
      views_.push_back(next);
      if (o.dtype == GPTRT_DTYPE_F32_ACCUMULATE) {
        std::fill(next, next + o.count, 0.0f);
      } else if (!o.output) {
        const uint16_t *in = static_cast<const uint16_t *>(o.data);
        for (int64_t i = 0; i < o.count; ++i)
          next[i] = cpu::bf16ToFloat(in[i]);
      }
      next += o.count;
    }
  }

  float *operator[](size_t i) const { return views_[i]; }

  void finish() {
    for (size_t i = 0; i < operands_.size(); ++i) {
      const StorageOperand &o = operands_[i];
      if (!o.output)
        continue;
      if (o.dtype == GPTRT_DTYPE_F32_ACCUMULATE) {
        float *out = static_cast<float *>(const_cast<void *>(o.data));
        for (int64_t j = 0; j < o.count; ++j)
          out[j] += views_[i][j];
      } else if (o.dtype == GPTRT_DTYPE_BF16) {
        uint16_t *out = static_cast<uint16_t *>(const_cast<void *>(o.data));
        for (int64_t j = 0; j < o.count; ++j)
          out[j] = cpu::floatToBf16(views_[i][j]);
      }
    }
  }

private:
  std::vector<StorageOperand> operands_;
  std::vector<float *> views_;
};

/// On steps that collect FP8 statistics, what casting x (n values) with
/// `scale` to `format` did, accumulated into `slot` (see gptrt.h).
template <typename ScaleAt>
void recordCastStats(Context &c, int64_t slot, const float *x, int64_t n,
                     ScaleAt scaleAt, int64_t format, bool oneScale = false) {
  if (slot < 0 || !c.collectingFp8Stats())
    return;
  if (slot >= static_cast<int64_t>(c.fp8Stats().size()))
    throw std::invalid_argument(
        "stat_slot " + std::to_string(slot) + ", expected < " +
        std::to_string(c.fp8Stats().size()) + " (the manifest's fp8_stats)");
  gptrt::Fp8CastStats &s = c.fp8Stats()[slot];
  // Saturated: clamped values that round-to-nearest-even would not have
  // brought back to the largest finite value -- above 464, halfway from
  // 448 to 480 (a tie there rounds to 448's even mantissa), for E4M3; from
  // 61440, halfway from 57344 to 65536 (a tie rounds up), for E5M2.
  const bool e4m3 = format == GPTRT_FP8_E4M3;
  const float limit = e4m3 ? 464.0f : 61440.0f;
  float amax = s.amax;
  int64_t underflow = 0, saturated = 0;
  // The scale logged for rowwise casts is the smallest (coarsest) one.
  float smallest = INFINITY;
  for (int64_t i = 0; i < n; ++i) {
    const float scale = scaleAt(i);
    float magnitude = std::fabs(x[i]);
    float scaled = magnitude * scale;
    amax = std::max(amax, magnitude);
    smallest = std::min(smallest, scale);
    saturated += e4m3 ? scaled > limit : scaled >= limit;
    // Codes 0x00 and 0x80 are +0 and -0 in both formats.
    underflow += x[i] != 0.0f && (fp8Encode(x[i] * scale, format) & 0x7F) == 0;
  }
  s.amax = amax;
  // One scale (tensorwise) is logged as it is, NaN included, as the GPU's
  // statistics kernel logs it; a row's or column's, the smallest, NaNs
  // skipped (std::min from infinity).
  if (n > 0)
    s.scale = oneScale ? scaleAt(0) : smallest;
  s.underflow += underflow;
  s.saturated += saturated;
  s.elements += n;
}

// The shard a sharded kernel over `n` gradient elements runs with.
void checkShardFits(const OptimizerShard &shard, int64_t n,
                    const char *arena);

gptrt::GradientExchange &exchangeFor(const Context &c,
                                     const OptimizerShard &shard);

} // namespace gptrt::abi

#endif // GPTRT_CORE_ABISUPPORT_H
