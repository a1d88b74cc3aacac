// The extern "C" gptrt_* functions that gptc artifacts call: thin wrappers
// that reach the Context, dispatch to the device's kernels (f32 CPU kernels
// of runtime/cpu today) and turn the kernels' "accumulates" conventions into
// the ABI's "writes" where the two differ.
//
// Nothing may throw out of these functions: their callers are frames of
// compiler-generated code. Every wrapper runs its body under `guarded`, which
// catches, records the first error in the Context and makes later kernel
// calls no-ops; Artifact::run rethrows it once the entry point returns.
#include "runtime/abi/gptrt.h"

#include "runtime/core/Abi.h"
#include "runtime/core/Context.h"
#include "runtime/core/OptimizerShard.h"
#include "runtime/cpu/Bf16.h"
#include "runtime/cpu/Fp8.h"
#include "runtime/cpu/Kernels.h"
#include "runtime/cuda/Backend.h"

#include <dlfcn.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

// Exported even if the build ever switches to -fvisibility=hidden.
#define GPTRT_EXPORT extern "C" __attribute__((visibility("default")))

namespace {

using gptrt::Context;
using gptrt::Device;
using gptrt::OptimizerShard;
namespace cpu = gptrt::cpu;

// Contract violations with no way to continue (no context to record into,
// or a pointer generated code would dereference): one line, then abort.
[[noreturn]] void fatal(const std::string &message) {
  std::fprintf(stderr, "gptrt: fatal: %s\n", message.c_str());
  std::fflush(stderr);
  std::abort();
}

Context &contextOf(gptrt_context *ctx, const char *fn) {
  if (ctx == nullptr || ctx->owner == nullptr)
    fatal(std::string(fn) +
          " called with a null context, expected the gptrt_context* the "
          "runtime passed to the entry point: this is a gptc bug");
  return Context::fromHandle(ctx);
}

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
  GemmResult = 1, // addGemmResult
  GemmProduct,    // gemmThenBias, gptrt_matmul_bf16_dgelu
  Fp8OperandA,    // fp8GemmUnscaled's decoded operands
  Fp8OperandB,
  LayerNormDx,    // gptrt_layernorm_bwd_add's dx
  ProducerOutput, // the _cast_dual producers' output
  Widened,        // runEpilogue's bf16 output widened
};
static_assert(static_cast<unsigned>(Temporary::Widened) <
                  Context::kScratchSlots,
              "every temporary has a scratch slot of its own");

float *temporary(Context &c, Temporary purpose, int64_t floats) {
  return c.scratch(static_cast<size_t>(floats), static_cast<unsigned>(purpose));
}

void requireNonNegative(int64_t v, const char *name) {
  if (v < 0)
    throw std::invalid_argument(std::string(name) + " = " + std::to_string(v) +
                                ", expected >= 0");
}

// The fused GEMM epilogues' sizes, and their results contiguous, so that
// the GELU or the bias runs over batch * m * n elements
// (rt-fuse-gemm-epilogue fuses only those).
void requireContiguous(int64_t batch, int64_t m, int64_t n, int64_t k,
                       int64_t strideC) {
  requireNonNegative(batch, "batch");
  requireNonNegative(m, "m");
  requireNonNegative(n, "n");
  requireNonNegative(k, "k");
  if (batch > 1 && strideC != m * n)
    throw std::invalid_argument(
        "stride_c " + std::to_string(strideC) +
        ", expected m * n = " + std::to_string(m * n) +
        " (a fused GEMM epilogue needs a contiguous result)");
}

// The CPU side of the *_accumulate GEMMs: c[i] += r[i] for the `count`
// f32 values r that `gemm` (the GEMM without the suffix, out_dtype f32)
// writes into its own buffer (the GEMMs use the context's scratch).
template <typename Gemm>
void addGemmResult(Context &ctx, float *c, int64_t count, Gemm &&gemm) {
  float *result = temporary(ctx, Temporary::GemmResult, count);
  gemm(result);
  if (ctx.failed())
    return;
  for (int64_t i = 0; i < count; ++i)
    c[i] += result[i];
}

// An FP8 GEMM's bias: a vector of n floats.
void requireBias(const float *bias) {
  if (bias == nullptr)
    throw std::invalid_argument("bias is null, expected a vector of n floats");
}

// The amax output of an _amax kernel: one float, which the kernel writes
// (a null one would be a silently skipped reduction on a GPU).
void requireAmax(const float *amax) {
  if (amax == nullptr)
    throw std::invalid_argument(
        "amax is null, expected a pointer to one float for the reduction");
}

// The CPU side of the FP8 GEMMs with a bias (rt-fuse-gemm-epilogue): the
// two kernels they fuse, so the same numbers as without the fusion -- the
// product as `gemm` stores it in out_dtype (into its own buffer: the GEMMs
// use the context's scratch), then gptrt_add of the bias (n f32) into c.
template <typename Gemm>
void gemmThenBias(gptrt_context *ctx, const float *bias, void *c, int64_t batch,
                  int64_t m, int64_t n, int64_t outDtype, Gemm &&gemm) {
  requireBias(bias);
  const int64_t count = batch * m * n;
  float *product =
      temporary(Context::fromHandle(ctx), Temporary::GemmProduct,
                outDtype == GPTRT_DTYPE_BF16 ? (count + 1) / 2 : count);
  gemm(static_cast<void *>(product));
  gptrt_add(ctx, product, bias, c, batch * m, n, 1, outDtype, GPTRT_DTYPE_F32,
            outDtype);
}

void requireFlag(int64_t flag, const char *name) {
  if (flag != 0 && flag != 1)
    throw std::invalid_argument(std::string(name) + " " +
                                std::to_string(flag) + ", expected 0 or 1");
}

void requireStorageDtype(int64_t dtype, const char *name) {
  if (dtype != GPTRT_DTYPE_F32 && dtype != GPTRT_DTYPE_BF16)
    throw std::invalid_argument(std::string(name) + " " +
                                std::to_string(dtype) +
                                ", expected f32 (1) or bf16 (2)");
}

// A parameter gradient's output: a storage dtype, or f32 added into
// (GPTRT_DTYPE_F32_ACCUMULATE).
void requireGradientDtype(int64_t dtype, const char *name) {
  if (dtype != GPTRT_DTYPE_F32 && dtype != GPTRT_DTYPE_BF16 &&
      dtype != GPTRT_DTYPE_F32_ACCUMULATE)
    throw std::invalid_argument(std::string(name) + " " +
                                std::to_string(dtype) +
                                ", expected f32 (1), bf16 (2) or f32 "
                                "accumulate (257)");
}

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

} // namespace

// ------------------------------------------------------------------ context

GPTRT_EXPORT void *gptrt_arena_base(gptrt_context *ctx, int64_t index) {
  Context &c = contextOf(ctx, "gptrt_arena_base");
  if (index < 0 || static_cast<uint64_t>(index) >= c.numArenas())
    fatal("gptrt_arena_base: arena index " + std::to_string(index) +
          " is out of range, expected 0.." +
          std::to_string(static_cast<int64_t>(c.numArenas()) - 1) +
          " (the manifest's arenas): the artifact disagrees with its own "
          "manifest; rebuild it with a fixed gptc");
  // Only optimizer_step writes parameters from generated code, and
  // Artifact::run outdates the weight cache around it: entries reading the
  // parameters must not.
  return const_cast<void *>(
      std::as_const(c).arenaBase(static_cast<size_t>(index)));
}

GPTRT_EXPORT void gptrt_step_scalar(gptrt_context *ctx, float *out,
                                    int64_t which) {
  // NaN first, so a failed lookup never leaves an old value looking valid
  // (on the CPU; on CUDA `out` is device memory).
  if (out != nullptr &&
      contextOf(ctx, "gptrt_step_scalar").device() == Device::Cpu)
    *out = std::nanf("");
  guarded(
      ctx, "gptrt_step_scalar", [&](Context &c) { *out = c.stepScalar(which); },
      [&](Context &c, Gpu &g) {
        c.stepScalar(which);  // range check, with the CPU's message
        g.copyStepScalar(out, which);
      });
}

// ------------------------------------------------------------------ kernels

GPTRT_EXPORT void gptrt_convert(gptrt_context *ctx, const void *src,
                                void *dst, int64_t n, int64_t from,
                                int64_t to) {
  guarded(ctx, "gptrt_convert", [&](Context &) {
    requireNonNegative(n, "n");
    if (from == GPTRT_DTYPE_F32 && to == GPTRT_DTYPE_BF16) {
      const float *in = static_cast<const float *>(src);
      uint16_t *out = static_cast<uint16_t *>(dst);
      for (int64_t i = 0; i < n; ++i)
        out[i] = cpu::floatToBf16(in[i]);
    } else if (from == GPTRT_DTYPE_BF16 && to == GPTRT_DTYPE_F32) {
      const uint16_t *in = static_cast<const uint16_t *>(src);
      float *out = static_cast<float *>(dst);
      for (int64_t i = 0; i < n; ++i)
        out[i] = cpu::bf16ToFloat(in[i]);
    } else {
      throw std::invalid_argument(
          "converts dtype " + std::to_string(from) + " to " +
          std::to_string(to) + ", expected f32 (1) <-> bf16 (2)");
    }
  }, [&](Context &, Gpu &g) {
    requireNonNegative(n, "n");
    g.convert(src, dst, n, from, to);
  });
}

namespace {

float fp8Decode(uint8_t code, int64_t format) {
  return format == GPTRT_FP8_E4M3 ? cpu::e4m3ToFloat(code)
                                  : cpu::e5m2ToFloat(code);
}

void requireFormat(int64_t format) {
  if (format != GPTRT_FP8_E4M3 && format != GPTRT_FP8_E5M2)
    throw std::invalid_argument("fp8 format " + std::to_string(format) +
                                ", expected 0 (E4M3) or 1 (E5M2)");
}

} // namespace

namespace {

/// Largest magnitude, NaN if any value is NaN.
float amaxOf(const float *x, int64_t n) {
  float amax = 0.0f;
  for (int64_t i = 0; i < n; ++i) {
    float a = std::fabs(x[i]);
    if (std::isnan(a))
      return a;
    amax = std::max(amax, a);
  }
  return amax;
}

uint8_t fp8Encode(float v, int64_t format) {
  return format == GPTRT_FP8_E4M3 ? cpu::floatToE4M3(v) : cpu::floatToE5M2(v);
}

/// Calls body(encode) with the float -> FP8 conversion of `format` as a
/// lambda of its own, so that the casts' loops over it, compiled once per
/// format, vectorize (the conversion is branch-free: runtime/cpu/Fp8.h).
template <typename Body> void withFp8Encoder(int64_t format, Body &&body) {
  if (format == GPTRT_FP8_E4M3)
    body([](float v) { return cpu::floatToE4M3(v); });
  else
    body([](float v) { return cpu::floatToE5M2(v); });
}

/// The codes of x (rows x cols) times its scale -- rowScales[r],
/// colScales[c] (where not null) or `scale` -- into q, row-major, or
/// transposed (q cols x rows). Transposed in 64 x 64 blocks, each block's
/// rows encoded first (contiguous, so the encoder's loop vectorizes) and
/// then stored transposed: row by row, each code of a wide row would land
/// on its own cache line of q (the logits' gradient: 50304 of them).
void encodeFp8(const float *x, int64_t rows, int64_t cols,
               const float *rowScales, const float *colScales, float scale,
               int64_t format, bool transpose, uint8_t *q) {
  withFp8Encoder(format, [&](auto encode) {
    // Codes of row r, columns c0 .. c0 + width, into out.
    auto encodeRow = [&](int64_t r, int64_t c0, int64_t width, uint8_t *out) {
      const float *row = x + r * cols + c0;
      if (colScales) {
        const float *s = colScales + c0;
        for (int64_t j = 0; j < width; ++j)
          out[j] = encode(row[j] * s[j]);
      } else {
        const float s = rowScales ? rowScales[r] : scale;
        for (int64_t j = 0; j < width; ++j)
          out[j] = encode(row[j] * s);
      }
    };
    if (!transpose) {
      for (int64_t r = 0; r < rows; ++r)
        encodeRow(r, 0, cols, q + r * cols);
      return;
    }
    constexpr int64_t kBlock = 64;
    uint8_t tile[kBlock][kBlock];
    for (int64_t r0 = 0; r0 < rows; r0 += kBlock)
      for (int64_t c0 = 0; c0 < cols; c0 += kBlock) {
        const int64_t height = std::min(rows - r0, kBlock),
                      width = std::min(cols - c0, kBlock);
        for (int64_t i = 0; i < height; ++i)
          encodeRow(r0 + i, c0, width, tile[i]);
        for (int64_t j = 0; j < width; ++j)
          for (int64_t i = 0; i < height; ++i)
            q[(c0 + j) * rows + r0 + i] = tile[i][j];
      }
  });
}

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

} // namespace

GPTRT_EXPORT void gptrt_amax(gptrt_context *ctx, const void *x, float *out,
                             int64_t n, int64_t x_dtype) {
  guarded(ctx, "gptrt_amax", [&](Context &c) {
    requireNonNegative(n, "n");
    requireAmax(out);
    F32Staging f32(c, {{x, x_dtype, n, false, "x_dtype"}});
    out[0] = amaxOf(f32[0], n);
  }, [&](Context &, Gpu &g) {
    requireNonNegative(n, "n");
    requireAmax(out);
    requireStorageDtype(x_dtype, "x_dtype");
    g.amax(x, x_dtype, out, n);
  });
}

namespace {

/// fp8_max / max(amax, eps) / 2^margin, rounded down to a power of two on
/// request (computed in f32; DESIGN.md section 4).
float scaleFromAmax(float amax, double fp8Max, int64_t margin,
                    int64_t powerOfTwo, double eps) {
  float scale = static_cast<float>(fp8Max) /
                std::max(amax, static_cast<float>(eps));
  scale = std::ldexp(scale, -static_cast<int>(margin));
  if (powerOfTwo && std::isfinite(scale) && scale > 0.0f) {
    int exponent;
    std::frexp(scale, &exponent);  // scale = f * 2^exponent, f in [0.5, 1)
    scale = std::ldexp(1.0f, exponent - 1);
  }
  return scale;
}

} // namespace

GPTRT_EXPORT void gptrt_scale_from_amax(gptrt_context *ctx, const float *amax,
                                        float *out, double fp8Max,
                                        int64_t margin, int64_t powerOfTwo,
                                        double eps) {
  guarded(ctx, "gptrt_scale_from_amax", [&](Context &) {
    out[0] = scaleFromAmax(amax[0], fp8Max, margin, powerOfTwo, eps);
  }, [&](Context &, Gpu &g) {
    g.scaleFromAmax(amax, out, fp8Max, margin, powerOfTwo != 0, eps);
  });
}

GPTRT_EXPORT void gptrt_fp8_state_scale(gptrt_context *ctx,
                                        const float *history, float *out,
                                        int64_t length, double fp8Max,
                                        int64_t margin, int64_t powerOfTwo,
                                        double eps, int64_t mostRecent) {
  guarded(ctx, "gptrt_fp8_state_scale", [&](Context &) {
    if (length <= 0)
      throw std::invalid_argument("history_length " + std::to_string(length) +
                                  ", expected >= 1");
    // Amaxes are >= 0 and only finite ones are recorded, so 0 means none.
    float amax = mostRecent ? history[0]
                            : *std::max_element(history, history + length);
    if (amax == 0.0f) {
      out[0] = 1.0f;  // nothing recorded yet: the first step runs unscaled
      return;
    }
    out[0] = scaleFromAmax(amax, fp8Max, margin, powerOfTwo, eps);
  }, [&](Context &, Gpu &g) {
    g.fp8StateScale(history, out, length, fp8Max, margin, powerOfTwo != 0,
                    eps, mostRecent != 0);
  });
}

GPTRT_EXPORT void gptrt_fp8_state_update(gptrt_context *ctx, const float *amax,
                                         float *history, int64_t length) {
  guarded(ctx, "gptrt_fp8_state_update", [&](Context &) {
    if (length <= 0)
      throw std::invalid_argument("history_length " + std::to_string(length) +
                                  ", expected >= 1");
    if (!std::isfinite(amax[0]))
      return;
    std::memmove(history + 1, history, (length - 1) * sizeof(float));
    history[0] = amax[0];
  }, [&](Context &, Gpu &g) { g.fp8StateUpdate(amax, history, length); });
}

namespace {

// The arguments both batched state kernels take: count states of
// `length` amaxes each, `stride` floats apart, one mask bit each.
void checkStateBatch(int64_t count, int64_t length, int64_t stride) {
  requireNonNegative(count, "count");
  if (count > 64)
    throw std::invalid_argument("count " + std::to_string(count) +
                                ", expected at most 64 (one mask bit each)");
  if (length <= 0)
    throw std::invalid_argument("history_length " + std::to_string(length) +
                                ", expected >= 1");
  if (stride < length)
    throw std::invalid_argument("history_stride " + std::to_string(stride) +
                                ", expected >= history_length " +
                                std::to_string(length));
}

} // namespace

GPTRT_EXPORT void gptrt_fp8_state_update_batch(gptrt_context *ctx,
                                               const float *amax,
                                               float *history, int64_t count,
                                               int64_t length, int64_t stride,
                                               int64_t mask) {
  guarded(
      ctx, "gptrt_fp8_state_update_batch",
      [&](Context &) {
        checkStateBatch(count, length, stride);
        for (int64_t i = 0; i < count; ++i)
          if ((uint64_t(mask) >> i) & 1)
            gptrt_fp8_state_update(ctx, amax + i, history + i * stride, length);
      },
      [&](Context &, Gpu &g) {
        checkStateBatch(count, length, stride);
        g.fp8StateUpdateBatch(amax, history, count, length, stride,
                              uint64_t(mask));
      });
}

GPTRT_EXPORT void gptrt_fp8_state_scale_batch(
    gptrt_context *ctx, const float *history, float *out, int64_t count,
    int64_t length, int64_t stride, int64_t mask, double fp8Max, int64_t margin,
    int64_t powerOfTwo, double eps, int64_t mostRecent) {
  guarded(
      ctx, "gptrt_fp8_state_scale_batch",
      [&](Context &) {
        checkStateBatch(count, length, stride);
        for (int64_t i = 0; i < count; ++i)
          if ((uint64_t(mask) >> i) & 1)
            gptrt_fp8_state_scale(ctx, history + i * stride, out + i, length,
                                  fp8Max, margin, powerOfTwo, eps, mostRecent);
      },
      [&](Context &, Gpu &g) {
        checkStateBatch(count, length, stride);
        g.fp8StateScaleBatch(history, out, count, length, stride,
                             uint64_t(mask), fp8Max, margin, powerOfTwo != 0,
                             eps, mostRecent != 0);
      });
}

namespace {

// The scale a fused cast makes (rt-fuse-cast-scale), stored to own.out:
// scale_from_amax of amax[0] (current scaling), or fp8_state_scale of an
// amax history (delayed scaling), with those kernels' constants.
struct CastScaleArgs {
  gptrt::cuda::ScaleFromAmax own;
  int64_t powerOfTwo, mostRecent; // as passed, checked by checked()

  static CastScaleArgs fromAmax(const float *amax, float *out, double fp8Max,
                                int64_t margin, int64_t powerOfTwo,
                                double eps) {
    gptrt::cuda::ScaleFromAmax own;
    own.amax = amax;
    own.out = out;
    own.fp8Max = fp8Max;
    own.margin = margin;
    own.powerOfTwo = powerOfTwo != 0;
    own.eps = eps;
    return {own, powerOfTwo, 0};
  }
  static CastScaleArgs fromHistory(const float *history, float *out,
                                   int64_t length, double fp8Max,
                                   int64_t margin, int64_t powerOfTwo,
                                   double eps, int64_t mostRecent) {
    CastScaleArgs args =
        fromAmax(nullptr, out, fp8Max, margin, powerOfTwo, eps);
    args.own.history = history;
    args.own.historyLength = length;
    args.own.mostRecent = mostRecent != 0;
    args.mostRecent = mostRecent;
    return args;
  }

  // The arguments checked, as the GPU kernels take them.
  const gptrt::cuda::ScaleFromAmax &checked() const {
    if (own.amax == nullptr && own.history == nullptr)
      throw std::invalid_argument(
          "amax is null, expected the one float the scale is made from");
    if (own.history != nullptr && own.historyLength <= 0)
      throw std::invalid_argument("history_length " +
                                  std::to_string(own.historyLength) +
                                  ", expected >= 1");
    if (own.out == nullptr)
      throw std::invalid_argument(
          "scale is null, expected a pointer to one float for the scale");
    requireFlag(powerOfTwo, "power_of_two");
    requireFlag(mostRecent, "most_recent");
    return own;
  }
  // The CPU: the standalone kernel's arithmetic.
  void runOnCpu(gptrt_context *ctx) const {
    checked();
    if (own.amax != nullptr)
      gptrt_scale_from_amax(ctx, own.amax, own.out, own.fp8Max, own.margin,
                            powerOfTwo, own.eps);
    else
      gptrt_fp8_state_scale(ctx, own.history, own.out, own.historyLength,
                            own.fp8Max, own.margin, powerOfTwo, own.eps,
                            mostRecent);
  }
  // What the GPU kernels take: none of it without args.
  static gptrt::cuda::ScaleFromAmax onGpu(const CastScaleArgs *args) {
    return args ? args->checked() : gptrt::cuda::ScaleFromAmax{};
  }
};

// gptrt_quantize_fp8, and with scaleArgs its scale_ / state_ forms, whose
// scale is made first (on a GPU, by the cast's kernel).
void quantizeCast(gptrt_context *ctx, const char *name, const void *xData,
                  const float *scale, uint8_t *q, int64_t n, int64_t format,
                  int64_t statSlot, int64_t xDtype,
                  const CastScaleArgs *scaleArgs = nullptr) {
  guarded(
      ctx, name,
      [&](Context &c) {
        if (scaleArgs)
          scaleArgs->runOnCpu(ctx);
        requireNonNegative(n, "n");
        requireFormat(format);
        F32Staging f32(c, {{xData, xDtype, n, false, "x_dtype"}});
        const float *x = f32[0];
        encodeFp8(x, 1, n, nullptr, nullptr, scale[0], format,
                  /*transpose=*/false, q);
        recordCastStats(
            c, statSlot, x, n, [&](int64_t) { return scale[0]; }, format,
            /*oneScale=*/true);
      },
      [&](Context &c, Gpu &g) {
        const gptrt::cuda::ScaleFromAmax own = CastScaleArgs::onGpu(scaleArgs);
        requireNonNegative(n, "n");
        requireStorageDtype(xDtype, "x_dtype");
        g.quantizeFp8(xData, xDtype, scale, q, n, format, own);
        if (statSlot >= 0 && c.collectingFp8Stats())
          g.recordCastStats(xData, xDtype, n, scale, format, statSlot);
      });
}

// gptrt_quantize_fp8_transposed and its state_ form.
void quantizeCastTransposed(gptrt_context *ctx, const char *name,
                            const void *xData, const float *scale, uint8_t *q,
                            int64_t rows, int64_t cols, int64_t format,
                            int64_t statSlot, int64_t xDtype,
                            const CastScaleArgs *scaleArgs = nullptr) {
  guarded(
      ctx, name,
      [&](Context &c) {
        if (scaleArgs)
          scaleArgs->runOnCpu(ctx);
        requireNonNegative(rows, "rows");
        requireNonNegative(cols, "cols");
        requireFormat(format);
        const int64_t n = rows * cols;
        F32Staging f32(c, {{xData, xDtype, n, false, "x_dtype"}});
        const float *x = f32[0];
        const float s = scale[0];
        encodeFp8(x, rows, cols, nullptr, nullptr, s, format,
                  /*transpose=*/true, q);
        recordCastStats(
            c, statSlot, x, n, [&](int64_t) { return s; }, format,
            /*oneScale=*/true);
      },
      [&](Context &c, Gpu &g) {
        const gptrt::cuda::ScaleFromAmax own = CastScaleArgs::onGpu(scaleArgs);
        requireNonNegative(rows, "rows");
        requireNonNegative(cols, "cols");
        requireStorageDtype(xDtype, "x_dtype");
        g.quantizeFp8Transposed(xData, xDtype, scale, q, rows, cols, format,
                                own);
        if (statSlot >= 0 && c.collectingFp8Stats())
          g.recordCastStats(xData, xDtype, rows * cols, scale, format,
                            statSlot);
      });
}

} // namespace

GPTRT_EXPORT void gptrt_quantize_fp8(gptrt_context *ctx, const void *xData,
                                     const float *scale, uint8_t *q, int64_t n,
                                     int64_t format, int64_t statSlot,
                                     int64_t xDtype) {
  quantizeCast(ctx, "gptrt_quantize_fp8", xData, scale, q, n, format, statSlot,
               xDtype);
}

GPTRT_EXPORT void gptrt_scale_quantize_fp8(
    gptrt_context *ctx, const void *xData, const float *amax, uint8_t *q,
    float *scale, int64_t n, int64_t format, int64_t statSlot, int64_t xDtype,
    double fp8Max, int64_t margin, int64_t powerOfTwo, double eps) {
  const CastScaleArgs scaleArgs =
      CastScaleArgs::fromAmax(amax, scale, fp8Max, margin, powerOfTwo, eps);
  quantizeCast(ctx, "gptrt_scale_quantize_fp8", xData, scale, q, n, format,
               statSlot, xDtype, &scaleArgs);
}

GPTRT_EXPORT void gptrt_state_quantize_fp8(
    gptrt_context *ctx, const void *xData, const float *history, uint8_t *q,
    float *scale, int64_t n, int64_t format, int64_t statSlot, int64_t xDtype,
    int64_t length, double fp8Max, int64_t margin, int64_t powerOfTwo,
    double eps, int64_t mostRecent) {
  const CastScaleArgs scaleArgs = CastScaleArgs::fromHistory(
      history, scale, length, fp8Max, margin, powerOfTwo, eps, mostRecent);
  quantizeCast(ctx, "gptrt_state_quantize_fp8", xData, scale, q, n, format,
               statSlot, xDtype, &scaleArgs);
}

GPTRT_EXPORT void
gptrt_quantize_fp8_transposed(gptrt_context *ctx, const void *xData,
                              const float *scale, uint8_t *q, int64_t rows,
                              int64_t cols, int64_t format, int64_t statSlot,
                              int64_t xDtype) {
  quantizeCastTransposed(ctx, "gptrt_quantize_fp8_transposed", xData, scale, q,
                         rows, cols, format, statSlot, xDtype);
}

GPTRT_EXPORT void gptrt_state_quantize_fp8_transposed(
    gptrt_context *ctx, const void *xData, const float *history, uint8_t *q,
    float *scale, int64_t rows, int64_t cols, int64_t format, int64_t statSlot,
    int64_t xDtype, int64_t length, double fp8Max, int64_t margin,
    int64_t powerOfTwo, double eps, int64_t mostRecent) {
  const CastScaleArgs scaleArgs = CastScaleArgs::fromHistory(
      history, scale, length, fp8Max, margin, powerOfTwo, eps, mostRecent);
  quantizeCastTransposed(ctx, "gptrt_state_quantize_fp8_transposed", xData,
                         scale, q, rows, cols, format, statSlot, xDtype,
                         &scaleArgs);
}

namespace {

/// The CPU emulation of an FP8 GEMM before its scales are divided out: FP8
/// codes decode exactly to f32, so an f32 GEMM of the decoded values is the
/// FP8 product up to accumulation order.
void fp8GemmUnscaled(Context &ctx, const uint8_t *a, const uint8_t *b, float *c,
                     int64_t batch, int64_t m, int64_t n, int64_t k,
                     int64_t transA, int64_t transB, int64_t strideA,
                     int64_t strideB, int64_t strideC, int64_t formatA,
                     int64_t formatB) {
  requireFormat(formatA);
  requireFormat(formatB);
  // Elements spanned by `batch` matrices of `size` elements, `stride` apart
  // (0 when there are none; one shared matrix when the stride is 0).
  auto extent = [&](int64_t stride, int64_t size) -> int64_t {
    return batch == 0 ? 0 : (batch - 1) * stride + size;
  };
  const int64_t aElems = extent(strideA, m * k);
  const int64_t bElems = extent(strideB, n * k);
  float *fa = temporary(ctx, Temporary::Fp8OperandA, aElems),
        *fb = temporary(ctx, Temporary::Fp8OperandB, bElems);
  // Every code's value, once: a table lookup per element.
  float valueA[256], valueB[256];
  for (int code = 0; code < 256; ++code) {
    valueA[code] = fp8Decode(static_cast<uint8_t>(code), formatA);
    valueB[code] = fp8Decode(static_cast<uint8_t>(code), formatB);
  }
  for (int64_t i = 0; i < aElems; ++i)
    fa[i] = valueA[a[i]];
  for (int64_t i = 0; i < bElems; ++i)
    fb[i] = valueB[b[i]];
  cpu::gemmBatched(c, fa, fb, batch, m, n, k, transA != 0, transB != 0, 0.0f,
                   strideA, strideB, strideC);
}

} // namespace

namespace {

// gptrt_quantize_fp8_dual and its _bgrad forms: the transposed codes qT,
// the row-major ones q unless null, and db = gptrt_reduce_rows of x unless
// null, from one read on a GPU; on the CPU the kernels they fuse, so the
// same codes, sums and statistics.
// With scaleArgs (the scale_ / state_ forms) the scale is made first.
void quantizeDual(gptrt_context *ctx, const char *name, const void *xData,
                  const float *scale, uint8_t *q, uint8_t *qT, void *db,
                  int64_t rows, int64_t cols, int64_t format, int64_t statSlot,
                  int64_t statSlotT, int64_t xDtype, int64_t dbDtype,
                  const CastScaleArgs *scaleArgs = nullptr) {
  guarded(
      ctx, name,
      [&](Context &) {
        requireNonNegative(rows, "rows");
        requireNonNegative(cols, "cols");
        if (scaleArgs)
          scaleArgs->runOnCpu(ctx);
        if (q)
          gptrt_quantize_fp8(ctx, xData, scale, q, rows * cols, format,
                             statSlot, xDtype);
        gptrt_quantize_fp8_transposed(ctx, xData, scale, qT, rows, cols, format,
                                      statSlotT, xDtype);
        if (db)
          gptrt_reduce_rows(ctx, xData, db, rows, cols, xDtype, dbDtype);
      },
      [&](Context &c, Gpu &g) {
        const gptrt::cuda::ScaleFromAmax own = CastScaleArgs::onGpu(scaleArgs);
        requireNonNegative(rows, "rows");
        requireNonNegative(cols, "cols");
        requireStorageDtype(xDtype, "x_dtype");
        if (db)
          requireGradientDtype(dbDtype, "db_dtype");
        g.quantizeFp8Dual(xData, xDtype, scale, q, qT, rows, cols, format, db,
                          dbDtype, own);
        if (c.collectingFp8Stats())
          for (int64_t slot : {q ? statSlot : -1, statSlotT})
            if (slot >= 0)
              g.recordCastStats(xData, xDtype, rows * cols, scale, format,
                                slot);
      });
}

} // namespace

GPTRT_EXPORT void gptrt_quantize_fp8_dual(gptrt_context *ctx, const void *xData,
                                          const float *scale, uint8_t *q,
                                          uint8_t *qT, int64_t rows,
                                          int64_t cols, int64_t format,
                                          int64_t statSlot, int64_t statSlotT,
                                          int64_t xDtype) {
  quantizeDual(ctx, "gptrt_quantize_fp8_dual", xData, scale, q, qT,
               /*db=*/nullptr, rows, cols, format, statSlot, statSlotT, xDtype,
               /*dbDtype=*/0);
}

GPTRT_EXPORT void gptrt_quantize_fp8_transposed_bgrad(
    gptrt_context *ctx, const void *xData, const float *scale, uint8_t *q,
    void *db, int64_t rows, int64_t cols, int64_t format, int64_t statSlot,
    int64_t xDtype, int64_t dbDtype) {
  quantizeDual(ctx, "gptrt_quantize_fp8_transposed_bgrad", xData, scale,
               /*q=*/nullptr, q, db, rows, cols, format, /*statSlot=*/-1,
               statSlot, xDtype, dbDtype);
}

GPTRT_EXPORT void gptrt_quantize_fp8_dual_bgrad(
    gptrt_context *ctx, const void *xData, const float *scale, uint8_t *q,
    uint8_t *qT, void *db, int64_t rows, int64_t cols, int64_t format,
    int64_t statSlot, int64_t statSlotT, int64_t xDtype, int64_t dbDtype) {
  quantizeDual(ctx, "gptrt_quantize_fp8_dual_bgrad", xData, scale, q, qT, db,
               rows, cols, format, statSlot, statSlotT, xDtype, dbDtype);
}

GPTRT_EXPORT void gptrt_scale_quantize_fp8_dual(
    gptrt_context *ctx, const void *xData, const float *amax, uint8_t *q,
    uint8_t *qT, float *scale, int64_t rows, int64_t cols, int64_t format,
    int64_t statSlot, int64_t statSlotT, int64_t xDtype, double fp8Max,
    int64_t margin, int64_t powerOfTwo, double eps) {
  const CastScaleArgs scaleArgs =
      CastScaleArgs::fromAmax(amax, scale, fp8Max, margin, powerOfTwo, eps);
  quantizeDual(ctx, "gptrt_scale_quantize_fp8_dual", xData, scale, q, qT,
               /*db=*/nullptr, rows, cols, format, statSlot, statSlotT, xDtype,
               /*dbDtype=*/0, &scaleArgs);
}

GPTRT_EXPORT void gptrt_scale_quantize_fp8_dual_bgrad(
    gptrt_context *ctx, const void *xData, const float *amax, uint8_t *q,
    uint8_t *qT, void *db, float *scale, int64_t rows, int64_t cols,
    int64_t format, int64_t statSlot, int64_t statSlotT, int64_t xDtype,
    int64_t dbDtype, double fp8Max, int64_t margin, int64_t powerOfTwo,
    double eps) {
  const CastScaleArgs scaleArgs =
      CastScaleArgs::fromAmax(amax, scale, fp8Max, margin, powerOfTwo, eps);
  quantizeDual(ctx, "gptrt_scale_quantize_fp8_dual_bgrad", xData, scale, q, qT,
               db, rows, cols, format, statSlot, statSlotT, xDtype, dbDtype,
               &scaleArgs);
}

GPTRT_EXPORT void gptrt_state_quantize_fp8_transposed_bgrad(
    gptrt_context *ctx, const void *xData, const float *history, uint8_t *q,
    void *db, float *scale, int64_t rows, int64_t cols, int64_t format,
    int64_t statSlot, int64_t xDtype, int64_t dbDtype, int64_t length,
    double fp8Max, int64_t margin, int64_t powerOfTwo, double eps,
    int64_t mostRecent) {
  const CastScaleArgs scaleArgs = CastScaleArgs::fromHistory(
      history, scale, length, fp8Max, margin, powerOfTwo, eps, mostRecent);
  quantizeDual(ctx, "gptrt_state_quantize_fp8_transposed_bgrad", xData, scale,
               /*q=*/nullptr, q, db, rows, cols, format, /*statSlot=*/-1,
               statSlot, xDtype, dbDtype, &scaleArgs);
}

GPTRT_EXPORT void gptrt_state_quantize_fp8_dual(
    gptrt_context *ctx, const void *xData, const float *history, uint8_t *q,
    uint8_t *qT, float *scale, int64_t rows, int64_t cols, int64_t format,
    int64_t statSlot, int64_t statSlotT, int64_t xDtype, int64_t length,
    double fp8Max, int64_t margin, int64_t powerOfTwo, double eps,
    int64_t mostRecent) {
  const CastScaleArgs scaleArgs = CastScaleArgs::fromHistory(
      history, scale, length, fp8Max, margin, powerOfTwo, eps, mostRecent);
  quantizeDual(ctx, "gptrt_state_quantize_fp8_dual", xData, scale, q, qT,
               /*db=*/nullptr, rows, cols, format, statSlot, statSlotT, xDtype,
               /*dbDtype=*/0, &scaleArgs);
}

GPTRT_EXPORT void gptrt_state_quantize_fp8_dual_bgrad(
    gptrt_context *ctx, const void *xData, const float *history, uint8_t *q,
    uint8_t *qT, void *db, float *scale, int64_t rows, int64_t cols,
    int64_t format, int64_t statSlot, int64_t statSlotT, int64_t xDtype,
    int64_t dbDtype, int64_t length, double fp8Max, int64_t margin,
    int64_t powerOfTwo, double eps, int64_t mostRecent) {
  const CastScaleArgs scaleArgs = CastScaleArgs::fromHistory(
      history, scale, length, fp8Max, margin, powerOfTwo, eps, mostRecent);
  quantizeDual(ctx, "gptrt_state_quantize_fp8_dual_bgrad", xData, scale, q, qT,
               db, rows, cols, format, statSlot, statSlotT, xDtype, dbDtype,
               &scaleArgs);
}

GPTRT_EXPORT void gptrt_scaled_matmul(
    gptrt_context *ctx, const uint8_t *a, const uint8_t *b,
    const float *scaleA, const float *scaleB, void *c, int64_t batch,
    int64_t m, int64_t n, int64_t k, int64_t transA, int64_t transB,
    int64_t strideA, int64_t strideB, int64_t strideC, int64_t formatA,
    int64_t formatB, int64_t fastAccum, int64_t outDtype) {
  guarded(ctx, "gptrt_scaled_matmul", [&](Context &ctxRef) {
    requireFlag(fastAccum, "fast_accum");
    requireStorageDtype(outDtype, "out_dtype");
    for (auto [value, name] :
         {std::pair{batch, "batch"}, {m, "m"}, {n, "n"}, {k, "k"}})
      requireNonNegative(value, name);
    const int64_t cElems = batch == 0 ? 0 : (batch - 1) * strideC + m * n;
    // A bf16 c: the f32 result in scratch, rounded once. Only the batches'
    // own elements are touched: the gaps between strided batches are
    // someone else's.
    const bool narrow = outDtype == GPTRT_DTYPE_BF16;
    float *result = narrow ? ctxRef.scratch(static_cast<size_t>(cElems))
                           : static_cast<float *>(c);
    fp8GemmUnscaled(ctxRef, a, b, result, batch, m, n, k, transA, transB,
                    strideA, strideB, strideC, formatA, formatB);
    const float dequant = scaleA[0] * scaleB[0];
    uint16_t *out = static_cast<uint16_t *>(c);
    for (int64_t p = 0; p < batch; ++p)
      for (int64_t i = p * strideC; i < p * strideC + m * n; ++i) {
        result[i] /= dequant;
        if (narrow)
          out[i] = cpu::floatToBf16(result[i]);
      }
  }, [&](Context &, Gpu &g) {
    requireFlag(fastAccum, "fast_accum");
    requireStorageDtype(outDtype, "out_dtype");
    g.scaledMatmul(a, b, scaleA, scaleB, c, batch, m, n, k, transA != 0,
                   transB != 0, strideA, strideB, strideC, formatA, formatB,
                   fastAccum != 0, outDtype);
  });
}

GPTRT_EXPORT void gptrt_scaled_matmul_bias(
    gptrt_context *ctx, const uint8_t *a, const uint8_t *b, const float *scaleA,
    const float *scaleB, const float *bias, void *c, int64_t batch, int64_t m,
    int64_t n, int64_t k, int64_t transA, int64_t transB, int64_t strideA,
    int64_t strideB, int64_t strideC, int64_t formatA, int64_t formatB,
    int64_t fastAccum, int64_t outDtype) {
  guarded(
      ctx, "gptrt_scaled_matmul_bias",
      [&](Context &) {
        requireContiguous(batch, m, n, k, strideC);
        gemmThenBias(ctx, bias, c, batch, m, n, outDtype, [&](void *product) {
          gptrt_scaled_matmul(ctx, a, b, scaleA, scaleB, product, batch, m, n,
                              k, transA, transB, strideA, strideB, strideC,
                              formatA, formatB, fastAccum, outDtype);
        });
      },
      [&](Context &, Gpu &g) {
        requireBias(bias);
        requireContiguous(batch, m, n, k, strideC);
        requireFlag(fastAccum, "fast_accum");
        requireStorageDtype(outDtype, "out_dtype");
        g.scaledMatmulBias(a, b, scaleA, scaleB, bias, c, batch, m, n, k,
                           transA != 0, transB != 0, strideA, strideB, strideC,
                           formatA, formatB, fastAccum != 0, outDtype);
      });
}

// ----------------------------------------------------- rowwise scaling

GPTRT_EXPORT void gptrt_amax_rows(gptrt_context *ctx, const void *xData,
                                  float *out, int64_t rows, int64_t cols,
                                  int64_t alongCols, int64_t xDtype) {
  guarded(ctx, "gptrt_amax_rows", [&](Context &c) {
    requireNonNegative(rows, "rows");
    requireNonNegative(cols, "cols");
    F32Staging f32(c, {{xData, xDtype, rows * cols, false, "x_dtype"}});
    const float *x = f32[0];
    if (!alongCols) {
      for (int64_t r = 0; r < rows; ++r)
        out[r] = amaxOf(x + r * cols, cols);
      return;
    }
    std::fill(out, out + cols, 0.0f);
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < cols; ++c) {
        float a = std::fabs(x[r * cols + c]);
        // NaN wins, as in amaxOf.
        out[c] = std::isnan(out[c]) || std::isnan(a) ? NAN : std::max(out[c], a);
      }
  }, [&](Context &, Gpu &g) {
    requireStorageDtype(xDtype, "x_dtype");
    g.amaxRows(xData, xDtype, out, rows, cols, alongCols != 0);
  });
}

GPTRT_EXPORT void gptrt_row_scales(gptrt_context *ctx, const float *amax,
                                   float *out, int64_t n, double fp8Max,
                                   int64_t margin, int64_t powerOfTwo,
                                   double eps) {
  guarded(ctx, "gptrt_row_scales", [&](Context &) {
    requireNonNegative(n, "n");
    for (int64_t i = 0; i < n; ++i)
      out[i] = scaleFromAmax(amax[i], fp8Max, margin, powerOfTwo, eps);
  }, [&](Context &, Gpu &g) {
    g.rowScales(amax, out, n, fp8Max, margin, powerOfTwo != 0, eps);
  });
}

GPTRT_EXPORT void gptrt_quantize_rows(gptrt_context *ctx, const void *xData,
                                      const float *scales, uint8_t *q,
                                      int64_t rows, int64_t cols,
                                      int64_t alongCols, int64_t format,
                                      int64_t statSlot, int64_t xDtype) {
  guarded(
      ctx, "gptrt_quantize_rows",
      [&](Context &c) {
        requireNonNegative(rows, "rows");
        requireNonNegative(cols, "cols");
        requireFormat(format);
        F32Staging f32(c, {{xData, xDtype, rows * cols, false, "x_dtype"}});
        const float *x = f32[0];
        auto scaleAt = [&](int64_t i) {
          return alongCols ? scales[i % cols] : scales[i / cols];
        };
        encodeFp8(x, rows, cols, alongCols ? nullptr : scales,
                  alongCols ? scales : nullptr, 0.0f, format,
                  /*transpose=*/false, q);
        recordCastStats(c, statSlot, x, rows * cols, scaleAt, format);
      },
      [&](Context &c, Gpu &g) {
        requireStorageDtype(xDtype, "x_dtype");
        g.quantizeRows(xData, xDtype, scales, q, rows, cols, alongCols != 0,
                       format);
        if (statSlot >= 0 && c.collectingFp8Stats())
          g.recordRowwiseCastStats(xData, xDtype, rows, cols, scales,
                                   alongCols != 0, format, statSlot);
      });
}

GPTRT_EXPORT void
gptrt_amax_quantize_rows(gptrt_context *ctx, const void *xData, float *amax,
                         float *scales, uint8_t *q, int64_t rows, int64_t cols,
                         int64_t format, int64_t statSlot, int64_t xDtype,
                         double fp8Max, int64_t margin, int64_t powerOfTwo,
                         double eps) {
  guarded(
      ctx, "gptrt_amax_quantize_rows",
      [&](Context &) {
        requireNonNegative(rows, "rows");
        requireNonNegative(cols, "cols");
        requireFormat(format);
        gptrt_amax_rows(ctx, xData, amax, rows, cols, /*alongCols=*/0, xDtype);
        gptrt_row_scales(ctx, amax, scales, rows, fp8Max, margin, powerOfTwo,
                         eps);
        gptrt_quantize_rows(ctx, xData, scales, q, rows, cols, /*alongCols=*/0,
                            format, statSlot, xDtype);
      },
      [&](Context &c, Gpu &g) {
        requireStorageDtype(xDtype, "x_dtype");
        g.amaxQuantizeRows(xData, xDtype, amax, scales, q, rows, cols, format,
                           fp8Max, margin, powerOfTwo != 0, eps);
        if (statSlot >= 0 && c.collectingFp8Stats())
          g.recordRowwiseCastStats(xData, xDtype, rows, cols, scales,
                                   /*alongCols=*/false, format, statSlot);
      });
}

namespace {

/// gptrt_row_scales' arguments, for the scale_ forms of the rowwise
/// transposed casts: the scales made from amax into out.
struct RowScaleArgs {
  const float *amax;
  float *out;
  double fp8Max;
  int64_t margin, powerOfTwo;
  double eps;
};

/// gptrt_quantize_rows_transposed and its forms: with scaleArgs the scales
/// (of x's columns along_cols 1, else of its rows) are made first, into
/// scaleArgs->out, which is then `scales`; with db, db = gptrt_reduce_rows
/// of x as well (on a GPU from the cast's own read).
void rowsTransposedCast(gptrt_context *ctx, const char *name, const void *xData,
                        const RowScaleArgs *scaleArgs, const float *scales,
                        uint8_t *q, void *db, int64_t rows, int64_t cols,
                        int64_t alongCols, int64_t format, int64_t statSlot,
                        int64_t xDtype, int64_t dbDtype) {
  guarded(
      ctx, name,
      [&](Context &c) {
        requireNonNegative(rows, "rows");
        requireNonNegative(cols, "cols");
        requireFlag(alongCols, "along_cols");
        requireFormat(format);
        if (db)
          requireGradientDtype(dbDtype, "db_dtype");
        if (scaleArgs)
          gptrt_row_scales(ctx, scaleArgs->amax, scaleArgs->out,
                           alongCols ? cols : rows, scaleArgs->fp8Max,
                           scaleArgs->margin, scaleArgs->powerOfTwo,
                           scaleArgs->eps);
        F32Staging f32(c, {{xData, xDtype, rows * cols, false, "x_dtype"}});
        const float *x = f32[0];
        auto scaleAt = [&](int64_t i) {
          return alongCols ? scales[i % cols] : scales[i / cols];
        };
        encodeFp8(x, rows, cols, alongCols ? nullptr : scales,
                  alongCols ? scales : nullptr, 0.0f, format,
                  /*transpose=*/true, q);
        recordCastStats(c, statSlot, x, rows * cols, scaleAt, format);
        if (db)
          gptrt_reduce_rows(ctx, xData, db, rows, cols, xDtype, dbDtype);
      },
      [&](Context &c, Gpu &g) {
        requireNonNegative(rows, "rows");
        requireNonNegative(cols, "cols");
        requireFlag(alongCols, "along_cols");
        requireStorageDtype(xDtype, "x_dtype");
        if (db)
          requireGradientDtype(dbDtype, "db_dtype");
        if (scaleArgs)
          g.scaleQuantizeRowsTransposed(
              xData, xDtype, scaleArgs->amax, q, scaleArgs->out, rows, cols,
              alongCols != 0, format, scaleArgs->fp8Max, scaleArgs->margin,
              scaleArgs->powerOfTwo != 0, scaleArgs->eps, db, dbDtype);
        else
          g.quantizeRowsTransposed(xData, xDtype, scales, q, rows, cols,
                                   alongCols != 0, format, db, dbDtype);
        if (statSlot >= 0 && c.collectingFp8Stats())
          g.recordRowwiseCastStats(xData, xDtype, rows, cols, scales,
                                   alongCols != 0, format, statSlot);
      });
}

} // namespace

GPTRT_EXPORT void
gptrt_quantize_rows_transposed(gptrt_context *ctx, const void *xData,
                               const float *scales, uint8_t *q, int64_t rows,
                               int64_t cols, int64_t alongCols, int64_t format,
                               int64_t statSlot, int64_t xDtype) {
  rowsTransposedCast(ctx, "gptrt_quantize_rows_transposed", xData, nullptr,
                     scales, q, /*db=*/nullptr, rows, cols, alongCols, format,
                     statSlot, xDtype, 0);
}

GPTRT_EXPORT void gptrt_quantize_rows_transposed_bgrad(
    gptrt_context *ctx, const void *xData, const float *scales, uint8_t *q,
    void *db, int64_t rows, int64_t cols, int64_t alongCols, int64_t format,
    int64_t statSlot, int64_t xDtype, int64_t dbDtype) {
  rowsTransposedCast(ctx, "gptrt_quantize_rows_transposed_bgrad", xData,
                     nullptr, scales, q, db, rows, cols, alongCols, format,
                     statSlot, xDtype, dbDtype);
}

GPTRT_EXPORT void gptrt_scale_quantize_rows_transposed(
    gptrt_context *ctx, const void *xData, const float *amax, uint8_t *q,
    float *scales, int64_t rows, int64_t cols, int64_t alongCols,
    int64_t format, int64_t statSlot, int64_t xDtype, double fp8Max,
    int64_t margin, int64_t powerOfTwo, double eps) {
  const RowScaleArgs scaleArgs{amax, scales, fp8Max, margin, powerOfTwo, eps};
  rowsTransposedCast(ctx, "gptrt_scale_quantize_rows_transposed", xData,
                     &scaleArgs, scales, q, /*db=*/nullptr, rows, cols,
                     alongCols, format, statSlot, xDtype, 0);
}

GPTRT_EXPORT void gptrt_scale_quantize_rows_transposed_bgrad(
    gptrt_context *ctx, const void *xData, const float *amax, uint8_t *q,
    void *db, float *scales, int64_t rows, int64_t cols, int64_t alongCols,
    int64_t format, int64_t statSlot, int64_t xDtype, int64_t dbDtype,
    double fp8Max, int64_t margin, int64_t powerOfTwo, double eps) {
  const RowScaleArgs scaleArgs{amax, scales, fp8Max, margin, powerOfTwo, eps};
  rowsTransposedCast(ctx, "gptrt_scale_quantize_rows_transposed_bgrad", xData,
                     &scaleArgs, scales, q, db, rows, cols, alongCols, format,
                     statSlot, xDtype, dbDtype);
}

GPTRT_EXPORT void gptrt_scaled_matmul_rowwise(
    gptrt_context *ctx, const uint8_t *a, const uint8_t *b,
    const float *scaleA, const float *scaleB, void *c, int64_t batch,
    int64_t m, int64_t n, int64_t k, int64_t transA, int64_t transB,
    int64_t strideA, int64_t strideB, int64_t strideC, int64_t formatA,
    int64_t formatB, int64_t fastAccum, int64_t rowwiseA, int64_t rowwiseB,
    int64_t outDtype) {
  guarded(ctx, "gptrt_scaled_matmul_rowwise", [&](Context &ctxRef) {
    requireFlag(fastAccum, "fast_accum");
    if (batch > 1 && strideC != m * n)
      throw std::invalid_argument("stride_c " + std::to_string(strideC) +
                                  ", expected m * n = " +
                                  std::to_string(m * n) +
                                  " (rowwise scales index contiguous rows)");
    F32Staging f32(ctxRef, {{c, outDtype, batch * m * n, true, "out_dtype"}});
    float *result = f32[0];
    fp8GemmUnscaled(ctxRef, a, b, result, batch, m, n, k, transA, transB,
                    strideA, strideB, strideC, formatA, formatB);
    // Row r of all batch x m rows of c, column j: divided by a's scale of
    // its row and b's of its column (each a scalar when not rowwise).
    for (int64_t r = 0; r < batch * m; ++r)
      for (int64_t j = 0; j < n; ++j)
        result[r * n + j] /= (rowwiseA ? scaleA[r] : scaleA[0]) *
                             (rowwiseB ? scaleB[j] : scaleB[0]);
    f32.finish();
  }, [&](Context &, Gpu &g) {
    requireFlag(fastAccum, "fast_accum");
    requireStorageDtype(outDtype, "out_dtype");
    g.scaledMatmulRowwise(a, b, scaleA, scaleB, nullptr, c, batch, m, n, k,
                          transA != 0, transB != 0, strideA, strideB, strideC,
                          formatA, formatB, fastAccum != 0, rowwiseA != 0,
                          rowwiseB != 0, outDtype);
  });
}

GPTRT_EXPORT void gptrt_scaled_matmul_rowwise_bias(
    gptrt_context *ctx, const uint8_t *a, const uint8_t *b, const float *scaleA,
    const float *scaleB, const float *bias, void *c, int64_t batch, int64_t m,
    int64_t n, int64_t k, int64_t transA, int64_t transB, int64_t strideA,
    int64_t strideB, int64_t strideC, int64_t formatA, int64_t formatB,
    int64_t fastAccum, int64_t rowwiseA, int64_t rowwiseB, int64_t outDtype) {
  guarded(
      ctx, "gptrt_scaled_matmul_rowwise_bias",
      [&](Context &) {
        requireContiguous(batch, m, n, k, strideC);
        gemmThenBias(ctx, bias, c, batch, m, n, outDtype, [&](void *product) {
          gptrt_scaled_matmul_rowwise(ctx, a, b, scaleA, scaleB, product, batch,
                                      m, n, k, transA, transB, strideA, strideB,
                                      strideC, formatA, formatB, fastAccum,
                                      rowwiseA, rowwiseB, outDtype);
        });
      },
      [&](Context &, Gpu &g) {
        requireBias(bias);
        requireContiguous(batch, m, n, k, strideC);
        requireFlag(fastAccum, "fast_accum");
        requireStorageDtype(outDtype, "out_dtype");
        g.scaledMatmulRowwise(a, b, scaleA, scaleB, bias, c, batch, m, n, k,
                              transA != 0, transB != 0, strideA, strideB,
                              strideC, formatA, formatB, fastAccum != 0,
                              rowwiseA != 0, rowwiseB != 0, outDtype);
      });
}

GPTRT_EXPORT void gptrt_scaled_matmul_accumulate(
    gptrt_context *ctx, const uint8_t *a, const uint8_t *b, const float *scaleA,
    const float *scaleB, float *c, int64_t batch, int64_t m, int64_t n,
    int64_t k, int64_t transA, int64_t transB, int64_t strideA, int64_t strideB,
    int64_t strideC, int64_t formatA, int64_t formatB, int64_t fastAccum) {
  guarded(
      ctx, "gptrt_scaled_matmul_accumulate",
      [&](Context &ctxRef) {
        requireContiguous(batch, m, n, k, strideC);
        addGemmResult(ctxRef, c, batch * m * n, [&](float *result) {
          gptrt_scaled_matmul(ctx, a, b, scaleA, scaleB, result, batch, m, n, k,
                              transA, transB, strideA, strideB, strideC,
                              formatA, formatB, fastAccum, GPTRT_DTYPE_F32);
        });
      },
      [&](Context &, Gpu &g) {
        requireContiguous(batch, m, n, k, strideC);
        requireFlag(fastAccum, "fast_accum");
        g.scaledMatmul(a, b, scaleA, scaleB, c, batch, m, n, k, transA != 0,
                       transB != 0, strideA, strideB, strideC, formatA, formatB,
                       fastAccum != 0, gptrt::cuda::kAccumulateF32);
      });
}

GPTRT_EXPORT void gptrt_scaled_matmul_rowwise_accumulate(
    gptrt_context *ctx, const uint8_t *a, const uint8_t *b, const float *scaleA,
    const float *scaleB, float *c, int64_t batch, int64_t m, int64_t n,
    int64_t k, int64_t transA, int64_t transB, int64_t strideA, int64_t strideB,
    int64_t strideC, int64_t formatA, int64_t formatB, int64_t fastAccum,
    int64_t rowwiseA, int64_t rowwiseB) {
  guarded(
      ctx, "gptrt_scaled_matmul_rowwise_accumulate",
      [&](Context &ctxRef) {
        requireContiguous(batch, m, n, k, strideC);
        addGemmResult(ctxRef, c, batch * m * n, [&](float *result) {
          gptrt_scaled_matmul_rowwise(ctx, a, b, scaleA, scaleB, result, batch,
                                      m, n, k, transA, transB, strideA, strideB,
                                      strideC, formatA, formatB, fastAccum,
                                      rowwiseA, rowwiseB, GPTRT_DTYPE_F32);
        });
      },
      [&](Context &, Gpu &g) {
        requireContiguous(batch, m, n, k, strideC);
        requireFlag(fastAccum, "fast_accum");
        g.scaledMatmulRowwise(a, b, scaleA, scaleB, nullptr, c, batch, m, n, k,
                              transA != 0, transB != 0, strideA, strideB,
                              strideC, formatA, formatB, fastAccum != 0,
                              rowwiseA != 0, rowwiseB != 0,
                              gptrt::cuda::kAccumulateF32);
      });
}

GPTRT_EXPORT void gptrt_fill(gptrt_context *ctx, float *out, int64_t n,
                             double value) {
  guarded(ctx, "gptrt_fill", [&](Context &) {
    requireNonNegative(n, "n");
    cpu::fill(out, static_cast<float>(value), n);
  }, [&](Context &, Gpu &g) {
    requireNonNegative(n, "n");
    g.fill(out, n, static_cast<float>(value));
  });
}

GPTRT_EXPORT void gptrt_accumulate(gptrt_context *ctx, const void *src,
                                   float *dst, int64_t n, int64_t src_dtype) {
  guarded(ctx, "gptrt_accumulate", [&](Context &c) {
    requireNonNegative(n, "n");
    F32Staging f32(c, {{src, src_dtype, n, false, "src_dtype"}});
    // add's output may alias its first operand.
    cpu::add(dst, dst, f32[0], 1, n, false);
  }, [&](Context &, Gpu &g) {
    requireNonNegative(n, "n");
    requireStorageDtype(src_dtype, "src_dtype");
    g.accumulate(src, src_dtype, dst, n);
  });
}

GPTRT_EXPORT void gptrt_arange(gptrt_context *ctx, int32_t *out, int64_t n) {
  guarded(
      ctx, "gptrt_arange", [&](Context &) { cpu::arange(out, n); },
      [&](Context &, Gpu &g) { g.arange(out, n); });
}

GPTRT_EXPORT void gptrt_embedding_fwd(gptrt_context *ctx, const void *table,
                                      const int32_t *ids, void *out,
                                      int64_t rows, int64_t width,
                                      int64_t dtype) {
  // The table's row count is not passed, so ids cannot be range-checked
  // here; the runtime checks token ids against the vocabulary when it
  // writes the inputs (writeBatch).
  guarded(ctx, "gptrt_embedding_fwd", [&](Context &c) {
    requireNonNegative(rows, "rows");
    requireNonNegative(width, "width");
    int64_t tableRows = 0;
    for (int64_t i = 0; i < rows; ++i)
      tableRows = std::max<int64_t>(tableRows, int64_t(ids[i]) + 1);
    // Only the rows the ids reach are widened (the bf16 case).
    F32Staging f32(c, {{table, dtype, tableRows * width, false, "dtype"},
                       {out, dtype, rows * width, true, "dtype"}});
    cpu::embeddingForward(f32[1], f32[0], ids, rows, width);
    f32.finish();
  }, [&](Context &, Gpu &g) {
    requireStorageDtype(dtype, "dtype");
    g.embeddingForward(table, ids, out, rows, width, dtype);
  });
}

namespace {

// The CPU checks every id of an embedding's backward (the GPU skips bad
// ones; the host checked the batch when it wrote it).
void requireEmbeddingIds(const int32_t *ids, int64_t rows, int64_t tableRows,
                         int64_t width) {
  requireNonNegative(rows, "rows");
  requireNonNegative(tableRows, "table_rows");
  requireNonNegative(width, "width");
  for (int64_t i = 0; i < rows; ++i)
    if (ids[i] < 0 || ids[i] >= tableRows)
      throw std::out_of_range("id " + std::to_string(ids[i]) + " of row " +
                              std::to_string(i) + " is outside [0, " +
                              std::to_string(tableRows) +
                              "), the embedding table's rows");
}

} // namespace

GPTRT_EXPORT void gptrt_embedding_bwd(gptrt_context *ctx, const void *dout,
                                      const int32_t *ids, void *dtable,
                                      int64_t rows, int64_t table_rows,
                                      int64_t width, int64_t dout_dtype,
                                      int64_t dtable_dtype) {
  guarded(
      ctx, "gptrt_embedding_bwd",
      [&](Context &c) {
        requireEmbeddingIds(ids, rows, table_rows, width);
        F32Staging f32(
            c,
            {{dout, dout_dtype, rows * width, false, "dout_dtype"},
             {dtable, dtable_dtype, table_rows * width, true, "dtable_dtype"}});
        // The ABI writes dtable; the kernel accumulates.
        cpu::fill(f32[1], 0.0f, table_rows * width);
        cpu::embeddingBackward(f32[1], f32[0], ids, rows, width);
        f32.finish();
      },
      [&](Context &, Gpu &g) {
        requireNonNegative(table_rows, "table_rows");
        requireStorageDtype(dout_dtype, "dout_dtype");
        requireStorageDtype(dtable_dtype, "dtable_dtype");
        g.embeddingBackward(dout, dout_dtype, ids, dtable, dtable_dtype, rows,
                            table_rows, width);
      });
}

GPTRT_EXPORT void gptrt_embedding_bwd_accumulate(
    gptrt_context *ctx, const void *dout, const int32_t *ids, float *dtable,
    int64_t rows, int64_t table_rows, int64_t width, int64_t dout_dtype) {
  guarded(
      ctx, "gptrt_embedding_bwd_accumulate",
      [&](Context &c) {
        requireEmbeddingIds(ids, rows, table_rows, width);
        F32Staging f32(c,
                       {{dout, dout_dtype, rows * width, false, "dout_dtype"}});
        cpu::embeddingBackward(dtable, f32[0], ids, rows, width);
      },
      [&](Context &, Gpu &g) {
        requireNonNegative(table_rows, "table_rows");
        requireStorageDtype(dout_dtype, "dout_dtype");
        g.embeddingBackward(dout, dout_dtype, ids, dtable,
                            gptrt::cuda::kAccumulateF32, rows, table_rows,
                            width);
      });
}

namespace {

// The GPU bodies of the producers whose kernels also take the fused FP8
// epilogue (an empty one for the plain entry points).
void geluOnGpu(Gpu &g, const void *x, void *out, int64_t n, int64_t xDtype,
               int64_t outDtype, const gptrt::cuda::Fp8Epilogue &fp8) {
  requireNonNegative(n, "n");
  requireStorageDtype(xDtype, "x_dtype");
  requireStorageDtype(outDtype, "out_dtype");
  g.geluForwardFp8(x, xDtype, out, outDtype, n, fp8);
}

void geluGradOnGpu(Gpu &g, const void *dout, const void *x, void *dx, int64_t n,
                   int64_t doutDtype, int64_t xDtype, int64_t dxDtype,
                   const gptrt::cuda::Fp8Epilogue &fp8) {
  requireNonNegative(n, "n");
  requireStorageDtype(doutDtype, "dout_dtype");
  requireStorageDtype(xDtype, "x_dtype");
  requireStorageDtype(dxDtype, "dx_dtype");
  g.geluBackwardFp8(dout, doutDtype, x, xDtype, dx, dxDtype, n, fp8);
}

void addOnGpu(Gpu &g, const void *a, const void *b, void *out, int64_t outer,
              int64_t inner, int64_t broadcastB, int64_t aDtype,
              int64_t bDtype, int64_t outDtype,
              const gptrt::cuda::Fp8Epilogue &fp8) {
  requireNonNegative(outer, "outer");
  requireNonNegative(inner, "inner");
  requireStorageDtype(aDtype, "a_dtype");
  requireStorageDtype(bDtype, "b_dtype");
  requireStorageDtype(outDtype, "out_dtype");
  g.addFp8(a, aDtype, b, bDtype, out, outDtype, outer, inner, broadcastB != 0,
           fp8);
}

void layerNormOnGpu(Gpu &g, const void *x, const float *w, const float *b,
                    void *out, float *mean, float *rstd, int64_t rows,
                    int64_t width, double eps, int64_t xDtype,
                    int64_t outDtype, const gptrt::cuda::Fp8Epilogue &fp8) {
  requireStorageDtype(xDtype, "x_dtype");
  requireStorageDtype(outDtype, "out_dtype");
  g.layerNormForwardFp8(x, xDtype, w, b, out, outDtype, mean, rstd, rows,
                        width, static_cast<float>(eps), fp8);
}

} // namespace

GPTRT_EXPORT void gptrt_layernorm_fwd(gptrt_context *ctx, const void *x,
                                      const float *w, const float *b,
                                      void *out, float *mean, float *rstd,
                                      int64_t rows, int64_t width, double eps,
                                      int64_t x_dtype, int64_t out_dtype) {
  guarded(ctx, "gptrt_layernorm_fwd", [&](Context &c) {
    requireNonNegative(rows, "rows");
    requireNonNegative(width, "width");
    F32Staging f32(c, {{x, x_dtype, rows * width, false, "x_dtype"},
                       {out, out_dtype, rows * width, true, "out_dtype"}});
    cpu::layerNormForward(f32[1], mean, rstd, f32[0], w, b, rows, width,
                          static_cast<float>(eps));
    f32.finish();
  }, [&](Context &, Gpu &g) {
    layerNormOnGpu(g, x, w, b, out, mean, rstd, rows, width, eps, x_dtype,
                   out_dtype, {});
  });
}

namespace {

// gptrt_add_layernorm_fwd and its _amax and _cast forms on a GPU.
void addLayerNormOnGpu(Gpu &g, const void *a, const void *b, const float *w,
                       const float *bias, void *x, void *out, float *mean,
                       float *rstd, int64_t rows, int64_t width, double eps,
                       int64_t aDtype, int64_t bDtype, int64_t xDtype,
                       int64_t outDtype,
                       const gptrt::cuda::Fp8Epilogue &fp8 = {}) {
  requireNonNegative(rows, "rows");
  requireNonNegative(width, "width");
  requireStorageDtype(aDtype, "a_dtype");
  requireStorageDtype(bDtype, "b_dtype");
  requireStorageDtype(xDtype, "x_dtype");
  requireStorageDtype(outDtype, "out_dtype");
  g.addLayerNormForward(a, aDtype, b, bDtype, w, bias, x, xDtype, out, outDtype,
                        mean, rstd, rows, width, static_cast<float>(eps), fp8);
}

} // namespace

GPTRT_EXPORT void
gptrt_add_layernorm_fwd(gptrt_context *ctx, const void *a, const void *b,
                        const float *w, const float *bias, void *x, void *out,
                        float *mean, float *rstd, int64_t rows, int64_t width,
                        double eps, int64_t a_dtype, int64_t b_dtype,
                        int64_t x_dtype, int64_t out_dtype) {
  guarded(
      ctx, "gptrt_add_layernorm_fwd",
      [&](Context &) {
        requireNonNegative(rows, "rows");
        // The two kernels it fuses, so the same numbers as without the fusion.
        gptrt_add(ctx, a, b, x, rows, width, 0, a_dtype, b_dtype, x_dtype);
        gptrt_layernorm_fwd(ctx, x, w, bias, out, mean, rstd, rows, width, eps,
                            x_dtype, out_dtype);
      },
      [&](Context &, Gpu &g) {
        addLayerNormOnGpu(g, a, b, w, bias, x, out, mean, rstd, rows, width,
                          eps, a_dtype, b_dtype, x_dtype, out_dtype);
      });
}

namespace {

// gptrt_layernorm_bwd and its fused forms on a GPU: _amax and _cast
// through `fp8`, _add (dx added into the residual, the sum stored at dx)
// through `residual`.
void layerNormBackwardOnGpu(
    Gpu &g, const void *dout, const void *x, const float *w, const float *mean,
    const float *rstd, void *dx, void *dw, void *db, int64_t rows,
    int64_t width, int64_t doutDtype, int64_t xDtype, int64_t dxDtype,
    int64_t dwDtype, int64_t dbDtype, const gptrt::cuda::Fp8Epilogue &fp8 = {},
    const gptrt::cuda::ResidualGradient &residual = {}) {
  requireNonNegative(width, "width");
  for (auto [dtype, name] : {std::pair{doutDtype, "dout_dtype"},
                             {xDtype, "x_dtype"},
                             {dxDtype, "dx_dtype"}})
    requireStorageDtype(dtype, name);
  if (residual.resid) {
    requireStorageDtype(residual.residDtype, "resid_dtype");
    requireStorageDtype(residual.sumDtype, "sum_dtype");
  }
  requireGradientDtype(dwDtype, "dw_dtype");
  requireGradientDtype(dbDtype, "db_dtype");
  g.layerNormBackward(dout, doutDtype, x, xDtype, w, mean, rstd, dx, dxDtype,
                      dw, dwDtype, db, dbDtype, rows, width, fp8, residual);
}

} // namespace

GPTRT_EXPORT void gptrt_layernorm_bwd(gptrt_context *ctx, const void *dout,
                                      const void *x, const float *w,
                                      const float *mean, const float *rstd,
                                      void *dx, void *dw, void *db,
                                      int64_t rows, int64_t width,
                                      int64_t dout_dtype, int64_t x_dtype,
                                      int64_t dx_dtype, int64_t dw_dtype,
                                      int64_t db_dtype) {
  guarded(
      ctx, "gptrt_layernorm_bwd",
      [&](Context &c) {
        requireNonNegative(rows, "rows");
        requireNonNegative(width, "width");
        const int64_t n = rows * width;
        F32Staging f32(c, {{dout, dout_dtype, n, false, "dout_dtype"},
                           {x, x_dtype, n, false, "x_dtype"},
                           {dx, dx_dtype, n, true, "dx_dtype"},
                           {dw, dw_dtype, width, true, "dw_dtype", true},
                           {db, db_dtype, width, true, "db_dtype", true}});
        // The ABI writes dw and db; the kernel accumulates into them.
        cpu::fill(f32[3], 0.0f, width);
        cpu::fill(f32[4], 0.0f, width);
        cpu::layerNormBackward(f32[2], f32[3], f32[4], f32[0], f32[1], mean,
                               rstd, w, rows, width);
        f32.finish();
      },
      [&](Context &, Gpu &g) {
        layerNormBackwardOnGpu(g, dout, x, w, mean, rstd, dx, dw, db, rows,
                               width, dout_dtype, x_dtype, dx_dtype, dw_dtype,
                               db_dtype);
      });
}

GPTRT_EXPORT void gptrt_layernorm_bwd_amax(
    gptrt_context *ctx, const void *dout, const void *x, const float *w,
    const float *mean, const float *rstd, void *dx, void *dw, void *db,
    float *amax, int64_t rows, int64_t width, int64_t dout_dtype,
    int64_t x_dtype, int64_t dx_dtype, int64_t dw_dtype, int64_t db_dtype) {
  guarded(
      ctx, "gptrt_layernorm_bwd_amax",
      [&](Context &) {
        requireAmax(amax);
        gptrt_layernorm_bwd(ctx, dout, x, w, mean, rstd, dx, dw, db, rows,
                            width, dout_dtype, x_dtype, dx_dtype, dw_dtype,
                            db_dtype);
        gptrt_amax(ctx, dx, amax, rows * width, dx_dtype);
      },
      [&](Context &, Gpu &g) {
        requireAmax(amax);
        gptrt::cuda::Fp8Epilogue fp8;
        fp8.amax = amax;
        layerNormBackwardOnGpu(g, dout, x, w, mean, rstd, dx, dw, db, rows,
                               width, dout_dtype, x_dtype, dx_dtype, dw_dtype,
                               db_dtype, fp8);
      });
}

namespace {

void requireResidual(const void *resid) {
  if (resid == nullptr)
    throw std::invalid_argument(
        "resid is null, expected the residual gradient dx is added into");
}

// gptrt_layernorm_bwd_add on the CPU: the two kernels it fuses, dx in a
// buffer of its own (the kernels use the context's scratch).
void layerNormBackwardThenAdd(gptrt_context *ctx, const void *dout,
                              const void *x, const float *w, const float *mean,
                              const float *rstd, const void *resid, void *sum,
                              void *dw, void *db, int64_t rows, int64_t width,
                              int64_t doutDtype, int64_t xDtype,
                              int64_t dxDtype, int64_t dwDtype, int64_t dbDtype,
                              int64_t residDtype, int64_t sumDtype) {
  requireResidual(resid);
  requireNonNegative(rows, "rows");
  requireNonNegative(width, "width");
  requireStorageDtype(dxDtype, "dx_dtype");
  const int64_t n = rows * width;
  float *dx = temporary(Context::fromHandle(ctx), Temporary::LayerNormDx,
                        dxDtype == GPTRT_DTYPE_BF16 ? (n + 1) / 2 : n);
  gptrt_layernorm_bwd(ctx, dout, x, w, mean, rstd, dx, dw, db, rows, width,
                      doutDtype, xDtype, dxDtype, dwDtype, dbDtype);
  gptrt_add(ctx, resid, dx, sum, rows, width, /*broadcast_b=*/0, residDtype,
            dxDtype, sumDtype);
}

// gptrt_layernorm_bwd_add and its fused forms on a GPU.
void layerNormBackwardAddOnGpu(
    Gpu &g, const void *dout, const void *x, const float *w, const float *mean,
    const float *rstd, const void *resid, void *sum, void *dw, void *db,
    int64_t rows, int64_t width, int64_t doutDtype, int64_t xDtype,
    int64_t dxDtype, int64_t dwDtype, int64_t dbDtype, int64_t residDtype,
    int64_t sumDtype, const gptrt::cuda::Fp8Epilogue &fp8 = {}) {
  requireResidual(resid);
  layerNormBackwardOnGpu(g, dout, x, w, mean, rstd, sum, dw, db, rows, width,
                         doutDtype, xDtype, dxDtype, dwDtype, dbDtype, fp8,
                         {resid, residDtype, sumDtype});
}

} // namespace

GPTRT_EXPORT void gptrt_layernorm_bwd_add(
    gptrt_context *ctx, const void *dout, const void *x, const float *w,
    const float *mean, const float *rstd, const void *resid, void *sum,
    void *dw, void *db, int64_t rows, int64_t width, int64_t dout_dtype,
    int64_t x_dtype, int64_t dx_dtype, int64_t dw_dtype, int64_t db_dtype,
    int64_t resid_dtype, int64_t sum_dtype) {
  guarded(
      ctx, "gptrt_layernorm_bwd_add",
      [&](Context &) {
        layerNormBackwardThenAdd(ctx, dout, x, w, mean, rstd, resid, sum, dw,
                                 db, rows, width, dout_dtype, x_dtype, dx_dtype,
                                 dw_dtype, db_dtype, resid_dtype, sum_dtype);
      },
      [&](Context &, Gpu &g) {
        layerNormBackwardAddOnGpu(g, dout, x, w, mean, rstd, resid, sum, dw, db,
                                  rows, width, dout_dtype, x_dtype, dx_dtype,
                                  dw_dtype, db_dtype, resid_dtype, sum_dtype);
      });
}

GPTRT_EXPORT void gptrt_matmul(gptrt_context *ctx, const float *a,
                               const float *b, float *c, int64_t batch,
                               int64_t m, int64_t n, int64_t k,
                               int64_t trans_a, int64_t trans_b,
                               int64_t stride_a, int64_t stride_b,
                               int64_t stride_c) {
  guarded(ctx, "gptrt_matmul", [&](Context &) {
    requireNonNegative(batch, "batch");
    cpu::gemmBatched(c, a, b, batch, m, n, k, trans_a != 0, trans_b != 0,
                     0.0f, stride_a, stride_b, stride_c);
  }, [&](Context &, Gpu &g) {
    g.matmul(a, b, c, batch, m, n, k, trans_a != 0, trans_b != 0, stride_a,
             stride_b, stride_c);
  });
}

namespace {

// gptrt_matmul_bf16 and, with a bias (`withBias`), gptrt_matmul_bf16_bias.
void matmulBf16(gptrt_context *ctx, const char *fn, bool withBias,
                const uint16_t *a, const uint16_t *b, const float *bias,
                void *c, int64_t batch, int64_t m, int64_t n, int64_t k,
                int64_t trans_a, int64_t trans_b, int64_t stride_a,
                int64_t stride_b, int64_t stride_c, int64_t out_dtype) {
  auto checkArguments = [&] {
    if (withBias && bias == nullptr)
      throw std::invalid_argument("bias is null, expected a vector of n "
                                  "floats (gptrt_matmul_bf16 has no bias)");
    requireNonNegative(batch, "batch");
    requireNonNegative(m, "m");
    requireNonNegative(n, "n");
    requireNonNegative(k, "k");
    requireNonNegative(stride_a, "stride_a");
    requireNonNegative(stride_b, "stride_b");
    requireNonNegative(stride_c, "stride_c");
    requireStorageDtype(out_dtype, "out_dtype");
  };
  guarded(ctx, fn, [&](Context &ctxRef) {
    checkArguments();
    if (batch == 0)
      return;
    // Widened in their own layout (strides included), then the f32 GEMM:
    // widening is exact, so this is the f32 GEMM of the bf16 values.
    const int64_t extentA = (batch - 1) * stride_a + m * k;
    const int64_t extentB = (batch - 1) * stride_b + k * n;
    const int64_t extentC = (batch - 1) * stride_c + m * n;
    const bool narrow = out_dtype == GPTRT_DTYPE_BF16;
    float *wide = ctxRef.scratch(
        static_cast<size_t>(extentA + extentB + (narrow ? extentC : 0)));
    for (int64_t i = 0; i < extentA; ++i)
      wide[i] = cpu::bf16ToFloat(a[i]);
    for (int64_t i = 0; i < extentB; ++i)
      wide[extentA + i] = cpu::bf16ToFloat(b[i]);
    float *result = narrow ? wide + extentA + extentB : static_cast<float *>(c);
    cpu::gemmBatched(result, wide, wide + extentA, batch, m, n, k,
                     trans_a != 0, trans_b != 0, 0.0f, stride_a, stride_b,
                     stride_c);
    // Only the result's own elements: the gaps between strided batches
    // belong to someone else.
    for (int64_t p = 0; p < batch; ++p) {
      float *batchResult = result + p * stride_c;
      if (bias)
        cpu::addBias(batchResult, bias, m, n);
      if (narrow) {
        uint16_t *out = static_cast<uint16_t *>(c) + p * stride_c;
        for (int64_t i = 0; i < m * n; ++i)
          out[i] = cpu::floatToBf16(batchResult[i]);
      }
    }
  }, [&](Context &, Gpu &g) {
    checkArguments();
    g.matmulBf16(a, b, bias, c, out_dtype, batch, m, n, k, trans_a != 0,
                 trans_b != 0, stride_a, stride_b, stride_c);
  });
}

} // namespace

GPTRT_EXPORT void gptrt_matmul_bf16(gptrt_context *ctx, const uint16_t *a,
                                    const uint16_t *b, void *c,
                                    int64_t batch, int64_t m, int64_t n,
                                    int64_t k, int64_t trans_a,
                                    int64_t trans_b, int64_t stride_a,
                                    int64_t stride_b, int64_t stride_c,
                                    int64_t out_dtype) {
  matmulBf16(ctx, "gptrt_matmul_bf16", /*withBias=*/false, a, b, nullptr, c,
             batch, m, n, k, trans_a, trans_b, stride_a, stride_b, stride_c,
             out_dtype);
}

GPTRT_EXPORT void gptrt_matmul_bf16_bias(
    gptrt_context *ctx, const uint16_t *a, const uint16_t *b,
    const float *bias, void *c, int64_t batch, int64_t m, int64_t n,
    int64_t k, int64_t trans_a, int64_t trans_b, int64_t stride_a,
    int64_t stride_b, int64_t stride_c, int64_t out_dtype) {
  matmulBf16(ctx, "gptrt_matmul_bf16_bias", /*withBias=*/true, a, b, bias, c,
             batch, m, n, k, trans_a, trans_b, stride_a, stride_b, stride_c,
             out_dtype);
}

GPTRT_EXPORT void gptrt_matmul_bf16_bias_gelu(
    gptrt_context *ctx, const uint16_t *a, const uint16_t *b, const float *bias,
    void *pre, void *out, int64_t batch, int64_t m, int64_t n, int64_t k,
    int64_t trans_a, int64_t trans_b, int64_t stride_a, int64_t stride_b,
    int64_t stride_c, int64_t pre_dtype, int64_t out_dtype) {
  guarded(
      ctx, "gptrt_matmul_bf16_bias_gelu",
      [&](Context &) {
        requireContiguous(batch, m, n, k, stride_c);
        // The two kernels it fuses, so the same numbers as without the fusion.
        gptrt_matmul_bf16_bias(ctx, a, b, bias, pre, batch, m, n, k, trans_a,
                               trans_b, stride_a, stride_b, stride_c,
                               pre_dtype);
        gptrt_gelu_fwd(ctx, pre, out, batch * m * n, pre_dtype, out_dtype);
      },
      [&](Context &, Gpu &g) {
        if (bias == nullptr)
          throw std::invalid_argument("bias is null, expected a vector of n "
                                      "floats");
        requireContiguous(batch, m, n, k, stride_c);
        requireStorageDtype(pre_dtype, "pre_dtype");
        requireStorageDtype(out_dtype, "out_dtype");
        g.matmulBf16BiasGelu(a, b, bias, pre, pre_dtype, out, out_dtype, batch,
                             m, n, k, trans_a != 0, trans_b != 0, stride_a,
                             stride_b, stride_c);
      });
}

namespace {

// gptrt_matmul_bf16_bgrad's shapes: the bias gradient sums a's stored
// rows, so one GEMM with a stored [k, m].
void requireBiasGradientGemm(int64_t batch, int64_t m, int64_t n, int64_t k,
                             int64_t trans_a, int64_t db_dtype) {
  requireNonNegative(m, "m");
  requireNonNegative(n, "n");
  requireNonNegative(k, "k");
  if (batch != 1 || trans_a != 1)
    throw std::invalid_argument(
        "batch " + std::to_string(batch) + ", trans_a " +
        std::to_string(trans_a) +
        ", expected 1 and 1 (the weight gradient's GEMM, a stored [k, m])");
  requireGradientDtype(db_dtype, "db_dtype");
}

} // namespace

GPTRT_EXPORT void gptrt_matmul_bf16_bgrad(gptrt_context *ctx, const uint16_t *a,
                                          const uint16_t *b, void *c, void *db,
                                          int64_t batch, int64_t m, int64_t n,
                                          int64_t k, int64_t trans_a,
                                          int64_t trans_b, int64_t stride_a,
                                          int64_t stride_b, int64_t stride_c,
                                          int64_t out_dtype, int64_t db_dtype) {
  auto checkShape = [&] {
    requireBiasGradientGemm(batch, m, n, k, trans_a, db_dtype);
  };
  guarded(
      ctx, "gptrt_matmul_bf16_bgrad",
      [&](Context &) {
        checkShape();
        // The two kernels it fuses, so the same numbers as without the fusion.
        gptrt_matmul_bf16(ctx, a, b, c, batch, m, n, k, trans_a, trans_b,
                          stride_a, stride_b, stride_c, out_dtype);
        gptrt_reduce_rows(ctx, a, db, k, m, GPTRT_DTYPE_BF16, db_dtype);
      },
      [&](Context &, Gpu &g) {
        checkShape();
        requireStorageDtype(out_dtype, "out_dtype");
        g.matmulBf16Bgrad(a, b, c, out_dtype, db, db_dtype, m, n, k,
                          trans_b != 0, stride_a, stride_b, stride_c);
      });
}

GPTRT_EXPORT void gptrt_matmul_bf16_accumulate(
    gptrt_context *ctx, const uint16_t *a, const uint16_t *b, float *c,
    int64_t batch, int64_t m, int64_t n, int64_t k, int64_t trans_a,
    int64_t trans_b, int64_t stride_a, int64_t stride_b, int64_t stride_c) {
  guarded(
      ctx, "gptrt_matmul_bf16_accumulate",
      [&](Context &ctxRef) {
        requireContiguous(batch, m, n, k, stride_c);
        addGemmResult(ctxRef, c, batch * m * n, [&](float *result) {
          gptrt_matmul_bf16(ctx, a, b, result, batch, m, n, k, trans_a, trans_b,
                            stride_a, stride_b, stride_c, GPTRT_DTYPE_F32);
        });
      },
      [&](Context &, Gpu &g) {
        requireContiguous(batch, m, n, k, stride_c);
        requireNonNegative(stride_a, "stride_a");
        requireNonNegative(stride_b, "stride_b");
        g.matmulBf16(a, b, nullptr, c, gptrt::cuda::kAccumulateF32, batch, m, n,
                     k, trans_a != 0, trans_b != 0, stride_a, stride_b,
                     stride_c);
      });
}

GPTRT_EXPORT void gptrt_matmul_bf16_bgrad_accumulate(
    gptrt_context *ctx, const uint16_t *a, const uint16_t *b, float *c,
    void *db, int64_t batch, int64_t m, int64_t n, int64_t k, int64_t trans_a,
    int64_t trans_b, int64_t stride_a, int64_t stride_b, int64_t stride_c,
    int64_t db_dtype) {
  guarded(
      ctx, "gptrt_matmul_bf16_bgrad_accumulate",
      [&](Context &ctxRef) {
        requireBiasGradientGemm(batch, m, n, k, trans_a, db_dtype);
        addGemmResult(ctxRef, c, m * n, [&](float *result) {
          gptrt_matmul_bf16_bgrad(ctx, a, b, result, db, batch, m, n, k,
                                  trans_a, trans_b, stride_a, stride_b,
                                  stride_c, GPTRT_DTYPE_F32, db_dtype);
        });
      },
      [&](Context &, Gpu &g) {
        requireBiasGradientGemm(batch, m, n, k, trans_a, db_dtype);
        g.matmulBf16Bgrad(a, b, c, gptrt::cuda::kAccumulateF32, db, db_dtype, m,
                          n, k, trans_b != 0, stride_a, stride_b, stride_c);
      });
}

GPTRT_EXPORT void gptrt_matmul_bf16_dgelu(
    gptrt_context *ctx, const uint16_t *a, const uint16_t *b, const void *pre,
    void *dx, int64_t batch, int64_t m, int64_t n, int64_t k, int64_t trans_a,
    int64_t trans_b, int64_t stride_a, int64_t stride_b, int64_t stride_c,
    int64_t dg_dtype, int64_t pre_dtype, int64_t dx_dtype) {
  guarded(
      ctx, "gptrt_matmul_bf16_dgelu",
      [&](Context &c) {
        requireContiguous(batch, m, n, k, stride_c);
        requireStorageDtype(dg_dtype, "dg_dtype");
        // The product as the unfused GEMM stored it (its own buffer: the GEMM
        // uses the context's scratch), then the GELU gradient.
        const int64_t count = batch * m * n;
        float *dg =
            temporary(c, Temporary::GemmProduct,
                      dg_dtype == GPTRT_DTYPE_BF16 ? (count + 1) / 2 : count);
        gptrt_matmul_bf16(ctx, a, b, dg, batch, m, n, k, trans_a, trans_b,
                          stride_a, stride_b, stride_c, dg_dtype);
        gptrt_gelu_bwd(ctx, dg, pre, dx, count, dg_dtype, pre_dtype, dx_dtype);
      },
      [&](Context &, Gpu &g) {
        requireContiguous(batch, m, n, k, stride_c);
        requireStorageDtype(dg_dtype, "dg_dtype");
        requireStorageDtype(pre_dtype, "pre_dtype");
        requireStorageDtype(dx_dtype, "dx_dtype");
        g.matmulBf16Dgelu(a, b, pre, pre_dtype, dx, dx_dtype, dg_dtype, batch,
                          m, n, k, trans_a != 0, trans_b != 0, stride_a,
                          stride_b, stride_c);
      });
}

GPTRT_EXPORT void gptrt_bias_add(gptrt_context *ctx, const float *bias,
                                 float *c, int64_t rows, int64_t cols) {
  guarded(
      ctx, "gptrt_bias_add",
      [&](Context &) { cpu::addBias(c, bias, rows, cols); },
      [&](Context &, Gpu &g) { g.biasAdd(bias, c, rows, cols); });
}

GPTRT_EXPORT void gptrt_reduce_rows(gptrt_context *ctx, const void *x,
                                    void *out, int64_t rows, int64_t cols,
                                    int64_t x_dtype, int64_t out_dtype) {
  guarded(ctx, "gptrt_reduce_rows", [&](Context &c) {
    requireNonNegative(rows, "rows");
    requireNonNegative(cols, "cols");
    F32Staging f32(c, {{x, x_dtype, rows * cols, false, "x_dtype"},
                       {out, out_dtype, cols, true, "out_dtype", true}});
    cpu::sumRowsTree(f32[1], f32[0], rows, cols);
    f32.finish();
  }, [&](Context &, Gpu &g) {
    requireNonNegative(rows, "rows");
    requireNonNegative(cols, "cols");
    requireStorageDtype(x_dtype, "x_dtype");
    requireGradientDtype(out_dtype, "out_dtype");
    g.reduceRows(x, x_dtype, out, out_dtype, rows, cols);
  });
}

GPTRT_EXPORT void gptrt_add(gptrt_context *ctx, const void *a, const void *b,
                            void *out, int64_t outer, int64_t inner,
                            int64_t broadcast_b, int64_t a_dtype,
                            int64_t b_dtype, int64_t out_dtype) {
  guarded(ctx, "gptrt_add", [&](Context &c) {
    requireNonNegative(outer, "outer");
    requireNonNegative(inner, "inner");
    const int64_t n = outer * inner;
    F32Staging f32(c, {{a, a_dtype, n, false, "a_dtype"},
                       {b, b_dtype, broadcast_b ? inner : n, false, "b_dtype"},
                       {out, out_dtype, n, true, "out_dtype"}});
    cpu::add(f32[2], f32[0], f32[1], outer, inner, broadcast_b != 0);
    f32.finish();
  }, [&](Context &, Gpu &g) {
    addOnGpu(g, a, b, out, outer, inner, broadcast_b, a_dtype, b_dtype,
             out_dtype, {});
  });
}

GPTRT_EXPORT void gptrt_scale(gptrt_context *ctx, const float *x, float *out,
                              int64_t n, double s) {
  guarded(
      ctx, "gptrt_scale",
      [&](Context &) { cpu::scale(out, x, static_cast<float>(s), n); },
      [&](Context &, Gpu &g) { g.scale(x, out, n, static_cast<float>(s)); });
}

GPTRT_EXPORT void gptrt_gelu_fwd(gptrt_context *ctx, const void *x,
                                 void *out, int64_t n, int64_t x_dtype,
                                 int64_t out_dtype) {
  guarded(ctx, "gptrt_gelu_fwd", [&](Context &c) {
    F32Staging f32(c, {{x, x_dtype, n, false, "x_dtype"},
                       {out, out_dtype, n, true, "out_dtype"}});
    cpu::geluForward(f32[1], f32[0], n);
    f32.finish();
  }, [&](Context &, Gpu &g) {
    geluOnGpu(g, x, out, n, x_dtype, out_dtype, {});
  });
}

GPTRT_EXPORT void gptrt_gelu_bwd(gptrt_context *ctx, const void *dout,
                                 const void *x, void *dx, int64_t n,
                                 int64_t dout_dtype, int64_t x_dtype,
                                 int64_t dx_dtype) {
  guarded(
      ctx, "gptrt_gelu_bwd",
      [&](Context &c) {
        F32Staging f32(c, {{dout, dout_dtype, n, false, "dout_dtype"},
                           {x, x_dtype, n, false, "x_dtype"},
                           {dx, dx_dtype, n, true, "dx_dtype"}});
        cpu::geluBackward(f32[2], f32[1], f32[0], n);
        f32.finish();
      },
      [&](Context &, Gpu &g) {
        geluGradOnGpu(g, dout, x, dx, n, dout_dtype, x_dtype, dx_dtype, {});
      });
}

GPTRT_EXPORT void gptrt_copy_blocks(gptrt_context *ctx, const void *src,
                                    void *dst, int64_t outer, int64_t len,
                                    int64_t dst_stride, int64_t src_stride,
                                    int64_t dst_offset, int64_t src_offset,
                                    int64_t dtype) {
  guarded(ctx, "gptrt_copy_blocks", [&](Context &) {
    requireStorageDtype(dtype, "dtype");
    if (dtype == GPTRT_DTYPE_BF16)
      cpu::copyBlocks(static_cast<uint16_t *>(dst),
                      static_cast<const uint16_t *>(src), outer, len,
                      dst_stride, src_stride, dst_offset, src_offset);
    else
      cpu::copyBlocks(static_cast<float *>(dst),
                      static_cast<const float *>(src), outer, len, dst_stride,
                      src_stride, dst_offset, src_offset);
  }, [&](Context &, Gpu &g) {
    requireStorageDtype(dtype, "dtype");
    g.copyBlocks(src, dst, outer, len, dst_stride, src_stride, dst_offset,
                 src_offset, dtype == GPTRT_DTYPE_BF16 ? 2 : 4);
  });
}

GPTRT_EXPORT void gptrt_permute(gptrt_context *ctx, const float *src,
                                float *dst, int64_t rank, int64_t s0,
                                int64_t s1, int64_t s2, int64_t s3,
                                int64_t s4, int64_t s5, int64_t p0,
                                int64_t p1, int64_t p2, int64_t p3,
                                int64_t p4, int64_t p5) {
  guarded(ctx, "gptrt_permute", [&](Context &) {
    if (rank < 0 || rank > 6)
      throw std::invalid_argument("rank " + std::to_string(rank) +
                                  " is out of range, expected 0..6");
    const int64_t shape[6] = {s0, s1, s2, s3, s4, s5};
    const int64_t perm[6] = {p0, p1, p2, p3, p4, p5};
    cpu::permute(dst, src, shape, perm, static_cast<int>(rank));
  }, [&](Context &, Gpu &g) {
    if (rank < 0 || rank > 6)
      throw std::invalid_argument("rank " + std::to_string(rank) +
                                  " is out of range, expected 0..6");
    const int64_t shape[6] = {s0, s1, s2, s3, s4, s5};
    const int64_t perm[6] = {p0, p1, p2, p3, p4, p5};
    g.permute(src, dst, shape, perm, static_cast<int>(rank));
  });
}

namespace {
// batch * seq * width, each checked: the elements of q, k, v and out.
int64_t attentionElements(int64_t batch, int64_t seq, int64_t width) {
  requireNonNegative(batch, "batch");
  requireNonNegative(seq, "seq");
  requireNonNegative(width, "width");
  return batch * seq * width;
}
} // namespace

GPTRT_EXPORT void gptrt_attention_fwd(gptrt_context *ctx, const void *q,
                                      const void *k, const void *v, void *out,
                                      float *lse, int64_t batch, int64_t seq,
                                      int64_t width, int64_t heads,
                                      int64_t causal, int64_t dtype) {
  guarded(ctx, "gptrt_attention_fwd", [&](Context &c) {
    const int64_t n = attentionElements(batch, seq, width);
    F32Staging f32(c, {{q, dtype, n, false, "dtype"},
                       {k, dtype, n, false, "dtype"},
                       {v, dtype, n, false, "dtype"},
                       {out, dtype, n, true, "dtype"}});
    cpu::attentionForward(f32[3], lse, f32[0], f32[1], f32[2], batch, seq,
                          width, heads, causal != 0);
    f32.finish();
  }, [&](Context &, Gpu &g) {
    requireStorageDtype(dtype, "dtype");
    g.attentionForward(q, k, v, out, lse, batch, seq, width, heads,
                       causal != 0, dtype);
  });
}

GPTRT_EXPORT void gptrt_attention_bwd(gptrt_context *ctx, const void *dout,
                                      const void *q, const void *k,
                                      const void *v, const void *out,
                                      const float *lse, void *dq, void *dk,
                                      void *dv, int64_t batch, int64_t seq,
                                      int64_t width, int64_t heads,
                                      int64_t causal, int64_t dtype) {
  guarded(ctx, "gptrt_attention_bwd", [&](Context &c) {
    const int64_t n = attentionElements(batch, seq, width);
    F32Staging f32(c, {{dout, dtype, n, false, "dtype"},
                       {q, dtype, n, false, "dtype"},
                       {k, dtype, n, false, "dtype"},
                       {v, dtype, n, false, "dtype"},
                       {out, dtype, n, false, "dtype"},
                       {dq, dtype, n, true, "dtype"},
                       {dk, dtype, n, true, "dtype"},
                       {dv, dtype, n, true, "dtype"}});
    cpu::attentionBackward(f32[5], f32[6], f32[7], f32[0], f32[1], f32[2],
                           f32[3], f32[4], lse, batch, seq, width, heads,
                           causal != 0);
    f32.finish();
  }, [&](Context &, Gpu &g) {
    requireStorageDtype(dtype, "dtype");
    g.attentionBackward(dout, q, k, v, out, lse, dq, dk, dv, batch, seq,
                        width, heads, causal != 0, dtype);
  });
}

namespace {

/// q, k, v (or dq, dk, dv) as three [batch, seq, width] tensors from one
/// [batch, seq, 3 width] buffer, and back: the CPU's packed attention runs
/// the unpacked kernels on copies, so its numbers are theirs.
class PackedQkv {
public:
  PackedQkv(int64_t batch, int64_t seq, int64_t width, int64_t dtype)
      : rows_(batch * seq), width_(width),
        bytes_(dtype == GPTRT_DTYPE_BF16 ? 2 : 4),
        parts_(3, std::vector<unsigned char>(
                      static_cast<size_t>(rows_ * width_ * bytes_))) {
    requireStorageDtype(dtype, "dtype");
  }
  void *part(int i) { return parts_[i].data(); }
  void unpack(const void *packed) {
    const auto *src = static_cast<const unsigned char *>(packed);
    for (int i = 0; i < 3; ++i)
      for (int64_t r = 0; r < rows_; ++r)
        std::memcpy(parts_[i].data() + r * width_ * bytes_,
                    src + (r * 3 + i) * width_ * bytes_, width_ * bytes_);
  }
  void pack(void *packed) const {
    auto *dst = static_cast<unsigned char *>(packed);
    for (int i = 0; i < 3; ++i)
      for (int64_t r = 0; r < rows_; ++r)
        std::memcpy(dst + (r * 3 + i) * width_ * bytes_,
                    parts_[i].data() + r * width_ * bytes_, width_ * bytes_);
  }

private:
  int64_t rows_, width_, bytes_;
  std::vector<std::vector<unsigned char>> parts_;
};

} // namespace

GPTRT_EXPORT void gptrt_attention_fwd_packed(
    gptrt_context *ctx, const void *qkv, void *out, float *lse, int64_t batch,
    int64_t seq, int64_t width, int64_t heads, int64_t causal, int64_t dtype) {
  guarded(
      ctx, "gptrt_attention_fwd_packed",
      [&](Context &) {
        attentionElements(batch, seq, width);
        PackedQkv parts(batch, seq, width, dtype);
        parts.unpack(qkv);
        gptrt_attention_fwd(ctx, parts.part(0), parts.part(1), parts.part(2),
                            out, lse, batch, seq, width, heads, causal, dtype);
      },
      [&](Context &, Gpu &g) {
        attentionElements(batch, seq, width);
        requireStorageDtype(dtype, "dtype");
        g.attentionForwardPacked(qkv, out, lse, /*fp8=*/{}, batch, seq, width,
                                 heads, causal != 0, dtype);
      });
}

GPTRT_EXPORT void
gptrt_attention_fwd_packed_amax(gptrt_context *ctx, const void *qkv, void *out,
                                float *lse, float *amax, int64_t batch,
                                int64_t seq, int64_t width, int64_t heads,
                                int64_t causal, int64_t dtype) {
  guarded(
      ctx, "gptrt_attention_fwd_packed_amax",
      [&](Context &) {
        requireAmax(amax);
        gptrt_attention_fwd_packed(ctx, qkv, out, lse, batch, seq, width, heads,
                                   causal, dtype);
        gptrt_amax(ctx, out, amax, batch * seq * width, dtype);
      },
      [&](Context &, Gpu &g) {
        requireAmax(amax);
        attentionElements(batch, seq, width);
        requireStorageDtype(dtype, "dtype");
        g.attentionForwardPacked(qkv, out, lse, {amax}, batch, seq, width,
                                 heads, causal != 0, dtype);
      });
}

GPTRT_EXPORT void gptrt_attention_bwd_packed(
    gptrt_context *ctx, const void *dout, const void *qkv, const void *out,
    const float *lse, void *dqkv, int64_t batch, int64_t seq, int64_t width,
    int64_t heads, int64_t causal, int64_t dtype) {
  guarded(
      ctx, "gptrt_attention_bwd_packed",
      [&](Context &) {
        attentionElements(batch, seq, width);
        PackedQkv parts(batch, seq, width, dtype),
            grads(batch, seq, width, dtype);
        parts.unpack(qkv);
        gptrt_attention_bwd(ctx, dout, parts.part(0), parts.part(1),
                            parts.part(2), out, lse, grads.part(0),
                            grads.part(1), grads.part(2), batch, seq, width,
                            heads, causal, dtype);
        grads.pack(dqkv);
      },
      [&](Context &, Gpu &g) {
        attentionElements(batch, seq, width);
        requireStorageDtype(dtype, "dtype");
        g.attentionBackwardPacked(dout, qkv, out, lse, dqkv, nullptr, batch,
                                  seq, width, heads, causal != 0, dtype);
      });
}

GPTRT_EXPORT void gptrt_attention_bwd_packed_amax(
    gptrt_context *ctx, const void *dout, const void *qkv, const void *out,
    const float *lse, void *dqkv, float *amax, int64_t batch, int64_t seq,
    int64_t width, int64_t heads, int64_t causal, int64_t dtype) {
  guarded(
      ctx, "gptrt_attention_bwd_packed_amax",
      [&](Context &) {
        requireAmax(amax);
        gptrt_attention_bwd_packed(ctx, dout, qkv, out, lse, dqkv, batch, seq,
                                   width, heads, causal, dtype);
        gptrt_amax(ctx, dqkv, amax, 3 * batch * seq * width, dtype);
      },
      [&](Context &, Gpu &g) {
        requireAmax(amax);
        attentionElements(batch, seq, width);
        requireStorageDtype(dtype, "dtype");
        g.attentionBackwardPacked(dout, qkv, out, lse, dqkv, amax, batch, seq,
                                  width, heads, causal != 0, dtype);
      });
}

GPTRT_EXPORT void gptrt_cross_entropy_fwd(gptrt_context *ctx,
                                          const void *logits,
                                          const int32_t *targets, float *loss,
                                          float *lse, int64_t rows,
                                          int64_t vocab, int64_t padded_vocab,
                                          int64_t ignore_index,
                                          int64_t logits_dtype) {
  guarded(ctx, "gptrt_cross_entropy_fwd", [&](Context &c) {
    requireNonNegative(rows, "rows");
    requireNonNegative(padded_vocab, "padded_vocab");
    F32Staging f32(c, {{logits, logits_dtype, rows * padded_vocab, false,
                        "logits_dtype"}});
    *loss = cpu::crossEntropyForward(lse, f32[0], targets, rows, vocab,
                                     padded_vocab, ignore_index);
  }, [&](Context &, Gpu &g) {
    requireStorageDtype(logits_dtype, "logits_dtype");
    g.crossEntropyForward(logits, logits_dtype, targets, loss, lse, rows,
                          vocab, padded_vocab, ignore_index);
  });
}

GPTRT_EXPORT void gptrt_cross_entropy_bwd(gptrt_context *ctx,
                                          const float *dloss,
                                          const void *logits,
                                          const int32_t *targets,
                                          const float *lse, void *dlogits,
                                          int64_t rows, int64_t vocab,
                                          int64_t padded_vocab,
                                          int64_t ignore_index,
                                          int64_t dtype) {
  guarded(ctx, "gptrt_cross_entropy_bwd", [&](Context &c) {
    requireNonNegative(rows, "rows");
    requireNonNegative(padded_vocab, "padded_vocab");
    const int64_t n = rows * padded_vocab;
    F32Staging f32(c, {{logits, dtype, n, false, "dtype"},
                       {dlogits, dtype, n, true, "dtype"}});
    cpu::crossEntropyBackward(f32[1], f32[0], lse, targets, dloss[0], rows,
                              vocab, padded_vocab, ignore_index);
    f32.finish();
  }, [&](Context &, Gpu &g) {
    requireStorageDtype(dtype, "dtype");
    g.crossEntropyBackward(dloss, logits, targets, lse, dlogits, dtype, rows,
                           vocab, padded_vocab, ignore_index);
  });
}

namespace {

// gptrt_cross_entropy_fwd_bwd and its _amax form (amax null without).
void crossEntropyFwdBwd(gptrt_context *ctx, const char *name,
                        const float *dloss, const void *logits,
                        const int32_t *targets, float *loss, float *lse,
                        void *dlogits, float *amax, int64_t rows, int64_t vocab,
                        int64_t padded_vocab, int64_t ignore_index,
                        int64_t dtype, bool withAmax) {
  guarded(
      ctx, name,
      [&](Context &c) {
        if (withAmax)
          requireAmax(amax);
        // The CPU has no memory traffic to save: the two kernels, in order,
        // then gptrt_amax's reduction of the stored gradient.
        requireNonNegative(rows, "rows");
        requireNonNegative(padded_vocab, "padded_vocab");
        const int64_t n = rows * padded_vocab;
        F32Staging f32(c, {{logits, dtype, n, false, "dtype"},
                           {dlogits, dtype, n, true, "dtype"}});
        *loss = cpu::crossEntropyForward(lse, f32[0], targets, rows, vocab,
                                         padded_vocab, ignore_index);
        cpu::crossEntropyBackward(f32[1], f32[0], lse, targets, dloss[0], rows,
                                  vocab, padded_vocab, ignore_index);
        f32.finish();
        if (amax) {
          F32Staging stored(c, {{dlogits, dtype, n, false, "dtype"}});
          *amax = amaxOf(stored[0], n);
        }
      },
      [&](Context &, Gpu &g) {
        if (withAmax)
          requireAmax(amax);
        requireStorageDtype(dtype, "dtype");
        g.crossEntropyFused(dloss, logits, targets, loss, lse, dlogits, amax,
                            dtype, rows, vocab, padded_vocab, ignore_index);
      });
}

} // namespace

GPTRT_EXPORT void
gptrt_cross_entropy_fwd_bwd(gptrt_context *ctx, const float *dloss,
                            const void *logits, const int32_t *targets,
                            float *loss, float *lse, void *dlogits,
                            int64_t rows, int64_t vocab, int64_t padded_vocab,
                            int64_t ignore_index, int64_t dtype) {
  crossEntropyFwdBwd(ctx, "gptrt_cross_entropy_fwd_bwd", dloss, logits, targets,
                     loss, lse, dlogits, nullptr, rows, vocab, padded_vocab,
                     ignore_index, dtype, /*withAmax=*/false);
}

GPTRT_EXPORT void gptrt_cross_entropy_fwd_bwd_amax(
    gptrt_context *ctx, const float *dloss, const void *logits,
    const int32_t *targets, float *loss, float *lse, void *dlogits, float *amax,
    int64_t rows, int64_t vocab, int64_t padded_vocab, int64_t ignore_index,
    int64_t dtype) {
  crossEntropyFwdBwd(ctx, "gptrt_cross_entropy_fwd_bwd_amax", dloss, logits,
                     targets, loss, lse, dlogits, amax, rows, vocab,
                     padded_vocab, ignore_index, dtype, /*withAmax=*/true);
}

GPTRT_EXPORT void gptrt_global_norm(gptrt_context *ctx, const float *x,
                                    float *out, int64_t n) {
  guarded(ctx, "gptrt_global_norm", [&](Context &) {
    *out = static_cast<float>(std::sqrt(cpu::sumSquares(x, n)));
  }, [&](Context &, Gpu &g) {
    requireNonNegative(n, "n");
    g.globalNorm(x, out, n);
  });
}

GPTRT_EXPORT void gptrt_clip_scale(gptrt_context *ctx, const float *norm,
                                   float *out, double max_norm) {
  guarded(ctx, "gptrt_clip_scale", [&](Context &) {
    if (max_norm <= 0) {
      *out = 1.0f;
      return;
    }
    // As torch.nn.utils.clip_grad_norm_ computes it on an f32 norm tensor:
    // max_norm / (norm + 1e-6) is Tensor.__rtruediv__, i.e.
    // reciprocal(norm + 1e-6) * max_norm, each op rounded to f32, then
    // clamp(max=1) (which keeps a NaN, so a NaN norm stays visible).
    const float denom = norm[0] + 1e-6f;
    const float coef = (1.0f / denom) * static_cast<float>(max_norm);
    *out = std::isnan(coef) ? coef : std::min(coef, 1.0f);
  }, [&](Context &, Gpu &g) {
    g.clipScale(norm, out, max_norm <= 0 ? 0.0f : static_cast<float>(max_norm));
  });
}

namespace {

// gptrt_adamw's bodies, shared with gptrt_adamw_sharded.
void adamwCpu(Context &c, const float *grad, const float *grad_scale,
              const float *lr, const float *step, float *param, float *m,
              float *v, int64_t n, double beta1, double beta2, double eps,
              double weight_decay) {
  requireNonNegative(n, "n");
  const float s = step[0];
  if (!(s >= 1.0f) || s != std::floor(s))
    throw std::invalid_argument(
        "step scalar is " + std::to_string(s) +
        ", expected an integer >= 1: set it with Context::setStep before "
        "optimizer_step");
  const float scale = grad_scale[0];
  const float *g = grad;
  if (scale != 1.0f) {
    float *scaled = c.scratch(static_cast<size_t>(n));
    cpu::scale(scaled, grad, scale, n);
    g = scaled;
  }
  cpu::adamw(param, g, m, v, n, static_cast<double>(lr[0]), beta1, beta2, eps,
             weight_decay, static_cast<int64_t>(s));
}

void checkStepSet(const Context &c) {
  // On CUDA `step` is device memory; the value the runner set is checked
  // here (the kernel reads the pointer, so a captured step replays).
  if (c.step() < 1)
    throw std::invalid_argument(
        "optimizer step is " + std::to_string(c.step()) +
        ", expected an integer >= 1: set it with Context::setStep before "
        "optimizer_step");
}

// Calls update(first, count, mIndex, vIndex) for each run of the n elements
// of a parameter (gradient at element gradOffset) that this rank owns:
// elements [first, first + count) of the parameter, whose moments are at
// those indices of the optimizer arena. Unsharded, that is all of it.
template <typename Update>
void forEachOwnedRun(const Context &c, int64_t gradOffset, int64_t n,
                     int64_t gradElements, Update &&update) {
  const OptimizerShard *shard = c.optimizerShard();
  if (shard == nullptr) {
    update(0, n, gradOffset, gradElements + gradOffset);
    return;
  }
  for (const OptimizerShard::Range &r : shard->owned()) {
    const int64_t lo = std::max(r.gradBegin, gradOffset);
    const int64_t hi = std::min(r.gradBegin + r.count, gradOffset + n);
    if (lo >= hi)
      continue;
    const int64_t local = r.localBegin + (lo - r.gradBegin);
    update(lo - gradOffset, hi - lo, local, shard->localElements() + local);
  }
}

// The shard a sharded kernel over `n` gradient elements runs with.
void checkShardFits(const OptimizerShard &shard, int64_t n,
                    const char *arena) {
  if (shard.gradElements() != n)
    throw std::invalid_argument(
        std::string("the ") + arena + " arena has " + std::to_string(n) +
        " elements, the optimizer shard was made for " +
        std::to_string(shard.gradElements()) + ": the context was "
        "sharded for another artifact");
}

gptrt::GradientExchange &exchangeFor(const Context &c,
                                     const OptimizerShard &shard) {
  if (c.gradientExchange() == nullptr)
    throw std::logic_error("a sharded optimizer over " +
                           std::to_string(shard.world()) +
                           " ranks needs the gradient exchange set");
  return *c.gradientExchange();
}

} // namespace

GPTRT_EXPORT void gptrt_adamw(gptrt_context *ctx, const float *grad,
                              const float *grad_scale, const float *lr,
                              const float *step, float *param, float *m,
                              float *v, int64_t n, double beta1, double beta2,
                              double eps, double weight_decay) {
  guarded(
      ctx, "gptrt_adamw",
      [&](Context &c) {
        adamwCpu(c, grad, grad_scale, lr, step, param, m, v, n, beta1, beta2,
                 eps, weight_decay);
      },
      [&](Context &c, Gpu &gpu) {
        requireNonNegative(n, "n");
        checkStepSet(c);
        gpu.adamw(grad, grad_scale, lr, step, param, m, v, n, beta1, beta2, eps,
                  weight_decay, gptrt::cuda::AdamwDecay::all(n));
      });
}

static_assert(gptrt::cuda::AdamwDecay::kMaxRanges ==
              GPTRT_ADAMW_MAX_DECAY_RANGES);

GPTRT_EXPORT void gptrt_adamw_multi(gptrt_context *ctx, const float *grad,
                                    const float *grad_scale, const float *lr,
                                    const float *step, float *param, float *m,
                                    float *v, int64_t n, double beta1,
                                    double beta2, double eps,
                                    double weight_decay, int64_t decay_count,
                                    const int64_t *decay_ranges) {
  // The ranges as the CUDA kernels take them, checked.
  auto decayOf = [&] {
    requireNonNegative(n, "n");
    if (decay_count < 0 || decay_count > GPTRT_ADAMW_MAX_DECAY_RANGES)
      throw std::invalid_argument(
          "decay_count " + std::to_string(decay_count) + ", expected 0 to " +
          std::to_string(GPTRT_ADAMW_MAX_DECAY_RANGES) +
          ": split the parameters over more gptrt_adamw_multi calls");
    if (decay_count > 0 && decay_ranges == nullptr)
      throw std::invalid_argument("decay_ranges is null with decay_count " +
                                  std::to_string(decay_count) +
                                  ", expected 2 * decay_count bounds");
    gptrt::cuda::AdamwDecay d;
    d.count = decay_count;
    for (int64_t i = 0; i < 2 * decay_count; ++i) {
      d.bounds[i] = decay_ranges[i];
      const int64_t low = i == 0 ? 0 : d.bounds[i - 1];
      if (d.bounds[i] < low || d.bounds[i] > n)
        throw std::invalid_argument("decay_ranges[" + std::to_string(i) +
                                    "] is " + std::to_string(d.bounds[i]) +
                                    ", expected " + std::to_string(low) +
                                    " to n = " + std::to_string(n) +
                                    " (ascending ranges within the elements)");
    }
    return d;
  };
  guarded(
      ctx, "gptrt_adamw_multi",
      [&](Context &c) {
        const gptrt::cuda::AdamwDecay d = decayOf();
        // One gptrt_adamw per stretch of equal weight decay: the same bits.
        int64_t at = 0;
        for (int64_t j = 0; j <= d.count; ++j) {
          const int64_t begin = j < d.count ? d.bounds[2 * j] : n;
          if (begin > at)
            adamwCpu(c, grad + at, grad_scale, lr, step, param + at, m + at,
                     v + at, begin - at, beta1, beta2, eps, 0.0);
          if (j == d.count)
            break;
          const int64_t end = d.bounds[2 * j + 1];
          if (end > begin)
            adamwCpu(c, grad + begin, grad_scale, lr, step, param + begin,
                     m + begin, v + begin, end - begin, beta1, beta2, eps,
                     weight_decay);
          at = end;
        }
      },
      [&](Context &c, Gpu &gpu) {
        const gptrt::cuda::AdamwDecay d = decayOf();
        checkStepSet(c);
        gpu.adamw(grad, grad_scale, lr, step, param, m, v, n, beta1, beta2, eps,
                  weight_decay, d);
      });
}

GPTRT_EXPORT void gptrt_global_norm_sharded(gptrt_context *ctx,
                                            const float *grads, float *out,
                                            int64_t n) {
  guarded(ctx, "gptrt_global_norm_sharded", [&](Context &c) {
    requireNonNegative(n, "n");
    const OptimizerShard *shard = c.optimizerShard();
    if (shard == nullptr) {
      *out = static_cast<float>(std::sqrt(cpu::sumSquares(grads, n)));
      return;
    }
    checkShardFits(*shard, n, "grads");
    double sum = 0;
    for (const OptimizerShard::Range &r : shard->owned())
      sum += cpu::sumSquares(grads + r.gradBegin, r.count);
    if (shard->world() > 1)
      sum = exchangeFor(c, *shard).sumOverRanks(sum);
    *out = static_cast<float>(std::sqrt(sum));
  }, [&](Context &c, Gpu &g) {
    requireNonNegative(n, "n");
    const OptimizerShard *shard = c.optimizerShard();
    if (shard == nullptr) {
      g.globalNorm(grads, out, n);
      return;
    }
    checkShardFits(*shard, n, "grads");
    // Each owned run's norm on the device, their squares summed on the
    // host and over the ranks: ZeRO-1 waits for the device here, once per
    // optimizer step (the CPU sums each run in double instead).
    double sum = 0;
    for (const OptimizerShard::Range &r : shard->owned()) {
      g.globalNorm(grads + r.gradBegin, out, r.count);
      float norm = 0;
      g.toHost(&norm, out, sizeof norm);
      sum += static_cast<double>(norm) * norm;
    }
    if (shard->world() > 1)
      sum = exchangeFor(c, *shard).sumOverRanks(sum);
    const float total = static_cast<float>(std::sqrt(sum));
    g.toDevice(out, &total, sizeof total);
  });
}

GPTRT_EXPORT void gptrt_adamw_sharded(gptrt_context *ctx, const float *grad,
                                      const float *grad_scale, const float *lr,
                                      const float *step, float *param,
                                      float *optimizer, int64_t n,
                                      int64_t grad_offset,
                                      int64_t grad_elements, double beta1,
                                      double beta2, double eps,
                                      double weight_decay) {
  guarded(ctx, "gptrt_adamw_sharded", [&](Context &c) {
    requireNonNegative(n, "n");
    requireNonNegative(grad_offset, "grad_offset");
    forEachOwnedRun(c, grad_offset, n, grad_elements,
                    [&](int64_t first, int64_t count, int64_t mAt,
                        int64_t vAt) {
                      adamwCpu(c, grad + first, grad_scale, lr, step,
                               param + first, optimizer + mAt,
                               optimizer + vAt, count, beta1, beta2, eps,
                               weight_decay);
                    });
  }, [&](Context &c, Gpu &gpu) {
    requireNonNegative(n, "n");
    checkStepSet(c);
    forEachOwnedRun(
        c, grad_offset, n, grad_elements,
        [&](int64_t first, int64_t count, int64_t mAt, int64_t vAt) {
          gpu.adamw(grad + first, grad_scale, lr, step, param + first,
                    optimizer + mAt, optimizer + vAt, count, beta1, beta2, eps,
                    weight_decay, gptrt::cuda::AdamwDecay::all(count));
        });
  });
}

GPTRT_EXPORT void gptrt_gather_params(gptrt_context *ctx, float *params,
                                      int64_t n) {
  guarded(ctx, "gptrt_gather_params", [&](Context &c) {
    requireNonNegative(n, "n");
    const OptimizerShard *shard = c.optimizerShard();
    if (shard == nullptr || shard->world() == 1)
      return;
    checkShardFits(*shard, n, "params");
    exchangeFor(c, *shard).gatherParams(params, *shard);
  }, [&](Context &c, Gpu &g) {
    requireNonNegative(n, "n");
    const OptimizerShard *shard = c.optimizerShard();
    if (shard == nullptr || shard->world() == 1)
      return;
    checkShardFits(*shard, n, "params");
    // The exchange copies on its own stream: the updates must be done.
    g.synchronize();
    exchangeFor(c, *shard).gatherParams(params, *shard);
  });
}

// ------------------------------------------------ fused FP8 epilogues
// The CPU versions run the base kernel and then the epilogue over its
// output; the point of the ABI is that a GPU kernel does both in one pass.

namespace {

/// The extra work of a fused kernel over its first output (see gptrt.h).
struct Epilogue {
  int64_t rows, cols, dtype;
  float *amax;
  const float *scale = nullptr;  // _cast only, with the fields below
  uint8_t *q = nullptr;
  int64_t format = 0, transpose = 0, statSlot = -1;
};

void runEpilogue(Context &c, const void *out, const Epilogue &e) {
  requireNonNegative(e.rows, "rows");
  requireNonNegative(e.cols, "cols");
  requireAmax(e.amax);
  const int64_t n = e.rows * e.cols;
  const float *x = static_cast<const float *>(out);
  if (e.dtype == GPTRT_DTYPE_BF16) {
    float *widened = temporary(c, Temporary::Widened, n);
    const uint16_t *bits = static_cast<const uint16_t *>(out);
    for (int64_t i = 0; i < n; ++i)
      widened[i] = cpu::bf16ToFloat(bits[i]);
    x = widened;
  } else if (e.dtype != GPTRT_DTYPE_F32) {
    throw std::invalid_argument("out_dtype " + std::to_string(e.dtype) +
                                ", expected f32 (1) or bf16 (2)");
  }
  e.amax[0] = amaxOf(x, n);
  if (!e.q)
    return;
  requireFormat(e.format);
  const float scale = e.scale[0];
  encodeFp8(x, e.rows, e.cols, nullptr, nullptr, scale, e.format, e.transpose,
            e.q);
  recordCastStats(
      c, e.statSlot, x, n, [&](int64_t) { return scale; }, e.format,
      /*oneScale=*/true);
}

/// On a GPU, when the producer's kernel can take the epilogue itself (its
/// whole output of `elements` values, codes not transposed): launches it
/// through `run` with the epilogue, records the cast's statistics, and
/// returns true. Elsewhere false: the caller runs the base kernel, then
/// finish().
template <typename Run>
bool producedWithEpilogue(gptrt_context *ctx, const char *fn, const void *out,
                          int64_t elements, const Epilogue &e, Run run) {
  Context &context = contextOf(ctx, fn);
  if (context.failed() || context.device() != Device::Cuda || e.transpose != 0 ||
      e.rows * e.cols != elements)
    return false;
  guarded(
      ctx, fn,
      [&](Context &) {
        throw std::logic_error("the CPU runs the base kernel and finish()");
      },
      [&](Context &c, Gpu &g) {
        requireNonNegative(e.rows, "rows");
        requireNonNegative(e.cols, "cols");
        requireAmax(e.amax);
        if (e.dtype != GPTRT_DTYPE_F32 && e.dtype != GPTRT_DTYPE_BF16)
          throw std::invalid_argument("out_dtype " + std::to_string(e.dtype) +
                                      ", expected f32 (1) or bf16 (2)");
        run(g, gptrt::cuda::Fp8Epilogue{e.amax, e.scale, e.q, e.format});
        if (e.q && e.statSlot >= 0 && c.collectingFp8Stats())
          g.recordCastStats(out, e.dtype, elements, e.scale, e.format,
                            e.statSlot);
      });
  return true;
}

/// Runs `epilogue` after the base kernel, unless the base kernel failed.
void finish(gptrt_context *ctx, const char *fn, const void *out,
            const Epilogue &epilogue) {
  guarded(
      ctx, fn, [&](Context &c) { runEpilogue(c, out, epilogue); },
      [&](Context &c, Gpu &g) {
        requireAmax(epilogue.amax);
        g.castEpilogue(out, epilogue.dtype, epilogue.rows, epilogue.cols,
                       epilogue.amax, epilogue.scale, epilogue.q,
                       epilogue.format, epilogue.transpose != 0);
        if (epilogue.q && epilogue.statSlot >= 0 && c.collectingFp8Stats())
          g.recordCastStats(out, epilogue.dtype,
                            epilogue.rows * epilogue.cols, epilogue.scale,
                            epilogue.format, epilogue.statSlot);
      });
}

} // namespace

GPTRT_EXPORT void gptrt_convert_amax(gptrt_context *ctx, const void *src,
                                     void *dst, float *amax, int64_t n,
                                     int64_t from, int64_t to, int64_t rows,
                                     int64_t cols, int64_t outDtype) {
  const TimedCall timed(ctx, "gptrt_convert_amax");
  gptrt_convert(ctx, src, dst, n, from, to);
  finish(ctx, "gptrt_convert_amax", dst, {rows, cols, outDtype, amax});
}

GPTRT_EXPORT void gptrt_convert_cast(gptrt_context *ctx, const void *src,
                                     const float *scale, void *dst,
                                     float *amax, uint8_t *q, int64_t n,
                                     int64_t from, int64_t to, int64_t rows,
                                     int64_t cols, int64_t outDtype,
                                     int64_t format, int64_t transpose,
                                     int64_t statSlot) {
  const TimedCall timed(ctx, "gptrt_convert_cast");
  gptrt_convert(ctx, src, dst, n, from, to);
  finish(ctx, "gptrt_convert_cast", dst,
         {rows, cols, outDtype, amax, scale, q, format, transpose, statSlot});
}

namespace {
// For kernels with a dtype per operand, the epilogue's out_dtype repeats
// the base kernel's own output dtype: they must agree (the epilogue reads
// what the kernel wrote). Records the error and returns false otherwise.
bool agreeingDtypes(gptrt_context *ctx, const char *fn, int64_t kernelDtype,
                    int64_t outDtype) {
  if (kernelDtype == outDtype)
    return true;
  auto refuse = [&] {
    throw std::invalid_argument(
        "out_dtype " + std::to_string(outDtype) +
        " differs from the kernel's output dtype " +
        std::to_string(kernelDtype) + ": the epilogue reads what it wrote");
  };
  guarded(ctx, fn, [&](Context &) { refuse(); },
          [&](Context &, Gpu &) { refuse(); });
  return false;
}

/// A fused variant of a producer whose kernel takes the epilogue on a GPU
/// (see producedWithEpilogue): there `onGpu(gpu, epilogue)` runs it;
/// elsewhere `base()` runs the plain kernel and finish() the epilogue.
template <typename OnGpu, typename Base>
void fusedProducer(gptrt_context *ctx, const char *fn, int64_t kernelDtype,
                   const void *out, int64_t elements, const Epilogue &e,
                   OnGpu onGpu, Base base) {
  const TimedCall timed(ctx, fn);
  if (!agreeingDtypes(ctx, fn, kernelDtype, e.dtype) ||
      producedWithEpilogue(ctx, fn, out, elements, e, onGpu))
    return;
  base();
  finish(ctx, fn, out, e);
}
} // namespace

GPTRT_EXPORT void gptrt_attention_fwd_packed_cast(
    gptrt_context *ctx, const void *qkv, const float *scale, void *out,
    float *lse, float *amax, uint8_t *q, int64_t batch, int64_t seq,
    int64_t width, int64_t heads, int64_t causal, int64_t dtype, int64_t rows,
    int64_t cols, int64_t outDtype, int64_t format, int64_t transpose,
    int64_t statSlot) {
  fusedProducer(
      ctx, "gptrt_attention_fwd_packed_cast", dtype, out, batch * seq * width,
      {rows, cols, outDtype, amax, scale, q, format, transpose, statSlot},
      [&](Gpu &g, const gptrt::cuda::Fp8Epilogue &fp8) {
        attentionElements(batch, seq, width);
        requireStorageDtype(dtype, "dtype");
        g.attentionForwardPacked(qkv, out, lse, fp8, batch, seq, width, heads,
                                 causal != 0, dtype);
      },
      [&] {
        gptrt_attention_fwd_packed(ctx, qkv, out, lse, batch, seq, width, heads,
                                   causal, dtype);
      });
}

GPTRT_EXPORT void gptrt_layernorm_fwd_amax(
    gptrt_context *ctx, const void *x, const float *w, const float *b,
    void *y, float *mean, float *rstd, float *amax, int64_t rows,
    int64_t width, double eps, int64_t xDtype, int64_t yDtype,
    int64_t outRows, int64_t outCols, int64_t outDtype) {
  fusedProducer(
      ctx, "gptrt_layernorm_fwd_amax", yDtype, y, rows * width,
      {outRows, outCols, outDtype, amax},
      [&](Gpu &g, const gptrt::cuda::Fp8Epilogue &fp8) {
        layerNormOnGpu(g, x, w, b, y, mean, rstd, rows, width, eps, xDtype,
                       yDtype, fp8);
      },
      [&] {
        gptrt_layernorm_fwd(ctx, x, w, b, y, mean, rstd, rows, width, eps,
                            xDtype, yDtype);
      });
}

GPTRT_EXPORT void gptrt_layernorm_fwd_cast(
    gptrt_context *ctx, const void *x, const float *w, const float *b,
    const float *scale, void *y, float *mean, float *rstd, float *amax,
    uint8_t *q, int64_t rows, int64_t width, double eps, int64_t xDtype,
    int64_t yDtype, int64_t outRows, int64_t outCols, int64_t outDtype,
    int64_t format, int64_t transpose, int64_t statSlot) {
  fusedProducer(
      ctx, "gptrt_layernorm_fwd_cast", yDtype, y, rows * width,
      {outRows, outCols, outDtype, amax, scale, q, format, transpose, statSlot},
      [&](Gpu &g, const gptrt::cuda::Fp8Epilogue &fp8) {
        layerNormOnGpu(g, x, w, b, y, mean, rstd, rows, width, eps, xDtype,
                       yDtype, fp8);
      },
      [&] {
        gptrt_layernorm_fwd(ctx, x, w, b, y, mean, rstd, rows, width, eps,
                            xDtype, yDtype);
      });
}

GPTRT_EXPORT void gptrt_add_layernorm_fwd_amax(
    gptrt_context *ctx, const void *a, const void *b, const float *w,
    const float *bias, void *x, void *y, float *mean, float *rstd, float *amax,
    int64_t rows, int64_t width, double eps, int64_t aDtype, int64_t bDtype,
    int64_t xDtype, int64_t yDtype, int64_t outRows, int64_t outCols,
    int64_t outDtype) {
  fusedProducer(
      ctx, "gptrt_add_layernorm_fwd_amax", yDtype, y, rows * width,
      {outRows, outCols, outDtype, amax},
      [&](Gpu &g, const gptrt::cuda::Fp8Epilogue &fp8) {
        addLayerNormOnGpu(g, a, b, w, bias, x, y, mean, rstd, rows, width, eps,
                          aDtype, bDtype, xDtype, yDtype, fp8);
      },
      [&] {
        gptrt_add_layernorm_fwd(ctx, a, b, w, bias, x, y, mean, rstd, rows,
                                width, eps, aDtype, bDtype, xDtype, yDtype);
      });
}

GPTRT_EXPORT void gptrt_add_layernorm_fwd_cast(
    gptrt_context *ctx, const void *a, const void *b, const float *w,
    const float *bias, const float *scale, void *x, void *y, float *mean,
    float *rstd, float *amax, uint8_t *q, int64_t rows, int64_t width,
    double eps, int64_t aDtype, int64_t bDtype, int64_t xDtype, int64_t yDtype,
    int64_t outRows, int64_t outCols, int64_t outDtype, int64_t format,
    int64_t transpose, int64_t statSlot) {
  fusedProducer(
      ctx, "gptrt_add_layernorm_fwd_cast", yDtype, y, rows * width,
      {outRows, outCols, outDtype, amax, scale, q, format, transpose, statSlot},
      [&](Gpu &g, const gptrt::cuda::Fp8Epilogue &fp8) {
        addLayerNormOnGpu(g, a, b, w, bias, x, y, mean, rstd, rows, width, eps,
                          aDtype, bDtype, xDtype, yDtype, fp8);
      },
      [&] {
        gptrt_add_layernorm_fwd(ctx, a, b, w, bias, x, y, mean, rstd, rows,
                                width, eps, aDtype, bDtype, xDtype, yDtype);
      });
}

namespace {
// gptrt_layernorm_fwd_cast_dual and its _add form (`a` non-null): on the
// CPU the producer cast into a temporary output and the transposed cast
// of it; on a GPU the producer kernel without its output, then its codes
// transposed.
void layerNormCastDual(gptrt_context *ctx, const char *fn, const void *a,
                       const void *b, int64_t aDtype, int64_t bDtype, void *x,
                       int64_t xDtype, const float *w, const float *bias,
                       const float *scale, float *mean, float *rstd,
                       float *amax, uint8_t *q, uint8_t *qT, int64_t rows,
                       int64_t width, double eps, int64_t yDtype,
                       int64_t format, int64_t statSlot, int64_t statSlotT) {
  auto validate = [&] {
    requireNonNegative(rows, "rows");
    requireNonNegative(width, "width");
    requireStorageDtype(xDtype, "x_dtype");
    requireStorageDtype(yDtype, "y_dtype");
    if (a) {
      requireStorageDtype(aDtype, "a_dtype");
      requireStorageDtype(bDtype, "b_dtype");
    }
    requireFormat(format);
    requireAmax(amax);
  };
  guarded(
      ctx, fn,
      [&](Context &c) {
        validate();
        // f32 room serves a bf16 output too.
        float *y = temporary(c, Temporary::ProducerOutput, rows * width);
        if (a)
          gptrt_add_layernorm_fwd_cast(
              ctx, a, b, w, bias, scale, x, y, mean, rstd, amax, q, rows, width,
              eps, aDtype, bDtype, xDtype, yDtype, rows, width, yDtype, format,
              /*transpose=*/0, statSlot);
        else
          gptrt_layernorm_fwd_cast(ctx, x, w, bias, scale, y, mean, rstd, amax,
                                   q, rows, width, eps, xDtype, yDtype, rows,
                                   width, yDtype, format,
                                   /*transpose=*/0, statSlot);
        gptrt_quantize_fp8_transposed(ctx, y, scale, qT, rows, width, format,
                                      statSlotT, yDtype);
      },
      [&](Context &c, Gpu &g) {
        validate();
        const bool stats = c.collectingFp8Stats();
        g.layerNormCastDual(a, aDtype, b, bDtype, x, xDtype, w, bias, yDtype,
                            mean, rstd, rows, width, static_cast<float>(eps),
                            {amax, scale, q, format}, qT, stats ? statSlot : -1,
                            stats ? statSlotT : -1);
      });
}
} // namespace

GPTRT_EXPORT void gptrt_layernorm_fwd_cast_dual(
    gptrt_context *ctx, const void *x, const float *w, const float *b,
    const float *scale, float *mean, float *rstd, float *amax, uint8_t *q,
    uint8_t *qT, int64_t rows, int64_t width, double eps, int64_t xDtype,
    int64_t yDtype, int64_t format, int64_t statSlot, int64_t statSlotT) {
  layerNormCastDual(ctx, "gptrt_layernorm_fwd_cast_dual", nullptr, nullptr, 0,
                    0, const_cast<void *>(x), xDtype, w, b, scale, mean, rstd,
                    amax, q, qT, rows, width, eps, yDtype, format, statSlot,
                    statSlotT);
}

GPTRT_EXPORT void gptrt_add_layernorm_fwd_cast_dual(
    gptrt_context *ctx, const void *a, const void *b, const float *w,
    const float *bias, const float *scale, void *x, float *mean, float *rstd,
    float *amax, uint8_t *q, uint8_t *qT, int64_t rows, int64_t width,
    double eps, int64_t aDtype, int64_t bDtype, int64_t xDtype, int64_t yDtype,
    int64_t format, int64_t statSlot, int64_t statSlotT) {
  layerNormCastDual(ctx, "gptrt_add_layernorm_fwd_cast_dual", a, b, aDtype,
                    bDtype, x, xDtype, w, bias, scale, mean, rstd, amax, q, qT,
                    rows, width, eps, yDtype, format, statSlot, statSlotT);
}

GPTRT_EXPORT void gptrt_gelu_fwd_amax(gptrt_context *ctx, const void *x,
                                      void *y, float *amax, int64_t n,
                                      int64_t xDtype, int64_t yDtype,
                                      int64_t rows, int64_t cols,
                                      int64_t outDtype) {
  fusedProducer(
      ctx, "gptrt_gelu_fwd_amax", yDtype, y, n, {rows, cols, outDtype, amax},
      [&](Gpu &g, const gptrt::cuda::Fp8Epilogue &fp8) {
        geluOnGpu(g, x, y, n, xDtype, yDtype, fp8);
      },
      [&] { gptrt_gelu_fwd(ctx, x, y, n, xDtype, yDtype); });
}

GPTRT_EXPORT void gptrt_gelu_fwd_cast(gptrt_context *ctx, const void *x,
                                      const float *scale, void *y,
                                      float *amax, uint8_t *q, int64_t n,
                                      int64_t xDtype, int64_t yDtype,
                                      int64_t rows, int64_t cols,
                                      int64_t outDtype, int64_t format,
                                      int64_t transpose, int64_t statSlot) {
  fusedProducer(
      ctx, "gptrt_gelu_fwd_cast", yDtype, y, n,
      {rows, cols, outDtype, amax, scale, q, format, transpose, statSlot},
      [&](Gpu &g, const gptrt::cuda::Fp8Epilogue &fp8) {
        geluOnGpu(g, x, y, n, xDtype, yDtype, fp8);
      },
      [&] { gptrt_gelu_fwd(ctx, x, y, n, xDtype, yDtype); });
}

GPTRT_EXPORT void gptrt_gelu_bwd_amax(gptrt_context *ctx, const void *dout,
                                      const void *x, void *dx, float *amax,
                                      int64_t n, int64_t doutDtype,
                                      int64_t xDtype, int64_t dxDtype,
                                      int64_t rows, int64_t cols,
                                      int64_t outDtype) {
  fusedProducer(
      ctx, "gptrt_gelu_bwd_amax", dxDtype, dx, n, {rows, cols, outDtype, amax},
      [&](Gpu &g, const gptrt::cuda::Fp8Epilogue &fp8) {
        geluGradOnGpu(g, dout, x, dx, n, doutDtype, xDtype, dxDtype, fp8);
      },
      [&] { gptrt_gelu_bwd(ctx, dout, x, dx, n, doutDtype, xDtype, dxDtype); });
}

GPTRT_EXPORT void gptrt_gelu_bwd_cast(
    gptrt_context *ctx, const void *dout, const void *x, const float *scale,
    void *dx, float *amax, uint8_t *q, int64_t n, int64_t doutDtype,
    int64_t xDtype, int64_t dxDtype, int64_t rows, int64_t cols,
    int64_t outDtype, int64_t format, int64_t transpose, int64_t statSlot) {
  fusedProducer(
      ctx, "gptrt_gelu_bwd_cast", dxDtype, dx, n,
      {rows, cols, outDtype, amax, scale, q, format, transpose, statSlot},
      [&](Gpu &g, const gptrt::cuda::Fp8Epilogue &fp8) {
        geluGradOnGpu(g, dout, x, dx, n, doutDtype, xDtype, dxDtype, fp8);
      },
      [&] { gptrt_gelu_bwd(ctx, dout, x, dx, n, doutDtype, xDtype, dxDtype); });
}

namespace {
// gptrt_gelu_fwd_cast_dual and gptrt_gelu_bwd_cast_dual_bgrad: on the CPU
// the producer cast into a temporary output and the transposed cast (with
// the bias gradient) of it; on a GPU one kernel that never stores it.
void geluCastDual(gptrt_context *ctx, const char *fn, const void *dout,
                  int64_t doutDtype, const void *x, int64_t xDtype,
                  const float *scale, float *amax, uint8_t *q, uint8_t *qT,
                  void *db, int64_t dbDtype, int64_t n, int64_t yDtype,
                  int64_t rows, int64_t cols, int64_t outDtype, int64_t format,
                  int64_t statSlot, int64_t statSlotT) {
  auto validate = [&] {
    requireNonNegative(n, "n");
    requireNonNegative(rows, "rows");
    requireNonNegative(cols, "cols");
    if (rows * cols != n)
      throw std::invalid_argument(
          "rows * cols = " + std::to_string(rows * cols) + ", expected n = " +
          std::to_string(n) + " (both casts cover the whole output)");
    requireStorageDtype(yDtype, dout ? "dx_dtype" : "y_dtype");
    if (outDtype != yDtype)
      throw std::invalid_argument("out_dtype " + std::to_string(outDtype) +
                                  " differs from the output's dtype " +
                                  std::to_string(yDtype) +
                                  ": the casts read what the producer stores");
    requireFormat(format);
  };
  guarded(
      ctx, fn,
      [&](Context &c) {
        validate();
        // f32 room serves a bf16 output too.
        float *y = temporary(c, Temporary::ProducerOutput, n);
        if (dout == nullptr)
          gptrt_gelu_fwd_cast(ctx, x, scale, y, amax, q, n, xDtype, yDtype,
                              rows, cols, outDtype, format,
                              /*transpose=*/0, statSlot);
        else
          gptrt_gelu_bwd_cast(ctx, dout, x, scale, y, amax, q, n, doutDtype,
                              xDtype, yDtype, rows, cols, outDtype, format,
                              /*transpose=*/0, statSlot);
        if (db == nullptr)
          gptrt_quantize_fp8_transposed(ctx, y, scale, qT, rows, cols, format,
                                        statSlotT, outDtype);
        else
          gptrt_quantize_fp8_transposed_bgrad(ctx, y, scale, qT, db, rows, cols,
                                              format, statSlotT, outDtype,
                                              dbDtype);
      },
      [&](Context &c, Gpu &g) {
        validate();
        requireStorageDtype(xDtype, "x_dtype");
        if (dout != nullptr)
          requireStorageDtype(doutDtype, "dout_dtype");
        if (db != nullptr)
          requireGradientDtype(dbDtype, "db_dtype");
        const bool stats = c.collectingFp8Stats();
        g.geluCastDual(dout, doutDtype, x, xDtype, outDtype, scale, amax, q, qT,
                       db, dbDtype, rows, cols, format, stats ? statSlot : -1,
                       stats ? statSlotT : -1);
      });
}
} // namespace

GPTRT_EXPORT void
gptrt_gelu_fwd_cast_dual(gptrt_context *ctx, const void *x, const float *scale,
                         float *amax, uint8_t *q, uint8_t *qT, int64_t n,
                         int64_t xDtype, int64_t yDtype, int64_t rows,
                         int64_t cols, int64_t outDtype, int64_t format,
                         int64_t statSlot, int64_t statSlotT) {
  geluCastDual(ctx, "gptrt_gelu_fwd_cast_dual", nullptr, 0, x, xDtype, scale,
               amax, q, qT, nullptr, 0, n, yDtype, rows, cols, outDtype, format,
               statSlot, statSlotT);
}

GPTRT_EXPORT void gptrt_gelu_bwd_cast_dual_bgrad(
    gptrt_context *ctx, const void *dout, const void *x, const float *scale,
    float *amax, uint8_t *q, uint8_t *qT, void *db, int64_t n,
    int64_t doutDtype, int64_t xDtype, int64_t dxDtype, int64_t rows,
    int64_t cols, int64_t outDtype, int64_t format, int64_t statSlot,
    int64_t statSlotT, int64_t dbDtype) {
  geluCastDual(ctx, "gptrt_gelu_bwd_cast_dual_bgrad", dout, doutDtype, x,
               xDtype, scale, amax, q, qT, db, dbDtype, n, dxDtype, rows, cols,
               outDtype, format, statSlot, statSlotT);
}

GPTRT_EXPORT void gptrt_add_amax(gptrt_context *ctx, const void *a,
                                 const void *b, void *sum, float *amax,
                                 int64_t outer, int64_t inner,
                                 int64_t broadcastB, int64_t aDtype,
                                 int64_t bDtype, int64_t sumDtype,
                                 int64_t rows, int64_t cols,
                                 int64_t outDtype) {
  fusedProducer(
      ctx, "gptrt_add_amax", sumDtype, sum, outer * inner,
      {rows, cols, outDtype, amax},
      [&](Gpu &g, const gptrt::cuda::Fp8Epilogue &fp8) {
        addOnGpu(g, a, b, sum, outer, inner, broadcastB, aDtype, bDtype,
                 sumDtype, fp8);
      },
      [&] {
        gptrt_add(ctx, a, b, sum, outer, inner, broadcastB, aDtype, bDtype,
                  sumDtype);
      });
}

GPTRT_EXPORT void gptrt_add_cast(gptrt_context *ctx, const void *a,
                                 const void *b, const float *scale,
                                 void *sum, float *amax, uint8_t *q,
                                 int64_t outer, int64_t inner,
                                 int64_t broadcastB, int64_t aDtype,
                                 int64_t bDtype, int64_t sumDtype,
                                 int64_t rows, int64_t cols,
                                 int64_t outDtype, int64_t format,
                                 int64_t transpose, int64_t statSlot) {
  fusedProducer(
      ctx, "gptrt_add_cast", sumDtype, sum, outer * inner,
      {rows, cols, outDtype, amax, scale, q, format, transpose, statSlot},
      [&](Gpu &g, const gptrt::cuda::Fp8Epilogue &fp8) {
        addOnGpu(g, a, b, sum, outer, inner, broadcastB, aDtype, bDtype,
                 sumDtype, fp8);
      },
      [&] {
        gptrt_add(ctx, a, b, sum, outer, inner, broadcastB, aDtype, bDtype,
                  sumDtype);
      });
}

GPTRT_EXPORT void gptrt_layernorm_bwd_add_amax(
    gptrt_context *ctx, const void *dout, const void *x, const float *w,
    const float *mean, const float *rstd, const void *resid, void *sum,
    void *dw, void *db, float *amax, int64_t rows, int64_t width,
    int64_t doutDtype, int64_t xDtype, int64_t dxDtype, int64_t dwDtype,
    int64_t dbDtype, int64_t residDtype, int64_t sumDtype, int64_t outRows,
    int64_t outCols, int64_t outDtype) {
  fusedProducer(
      ctx, "gptrt_layernorm_bwd_add_amax", sumDtype, sum, rows * width,
      {outRows, outCols, outDtype, amax},
      [&](Gpu &g, const gptrt::cuda::Fp8Epilogue &fp8) {
        layerNormBackwardAddOnGpu(g, dout, x, w, mean, rstd, resid, sum, dw, db,
                                  rows, width, doutDtype, xDtype, dxDtype,
                                  dwDtype, dbDtype, residDtype, sumDtype, fp8);
      },
      [&] {
        gptrt_layernorm_bwd_add(ctx, dout, x, w, mean, rstd, resid, sum, dw, db,
                                rows, width, doutDtype, xDtype, dxDtype,
                                dwDtype, dbDtype, residDtype, sumDtype);
      });
}

GPTRT_EXPORT void gptrt_layernorm_bwd_add_cast(
    gptrt_context *ctx, const void *dout, const void *x, const float *w,
    const float *mean, const float *rstd, const void *resid, const float *scale,
    void *sum, void *dw, void *db, float *amax, uint8_t *q, int64_t rows,
    int64_t width, int64_t doutDtype, int64_t xDtype, int64_t dxDtype,
    int64_t dwDtype, int64_t dbDtype, int64_t residDtype, int64_t sumDtype,
    int64_t outRows, int64_t outCols, int64_t outDtype, int64_t format,
    int64_t transpose, int64_t statSlot) {
  fusedProducer(
      ctx, "gptrt_layernorm_bwd_add_cast", sumDtype, sum, rows * width,
      {outRows, outCols, outDtype, amax, scale, q, format, transpose, statSlot},
      [&](Gpu &g, const gptrt::cuda::Fp8Epilogue &fp8) {
        layerNormBackwardAddOnGpu(g, dout, x, w, mean, rstd, resid, sum, dw, db,
                                  rows, width, doutDtype, xDtype, dxDtype,
                                  dwDtype, dbDtype, residDtype, sumDtype, fp8);
      },
      [&] {
        gptrt_layernorm_bwd_add(ctx, dout, x, w, mean, rstd, resid, sum, dw, db,
                                rows, width, doutDtype, xDtype, dxDtype,
                                dwDtype, dbDtype, residDtype, sumDtype);
      });
}

GPTRT_EXPORT void gptrt_matmul_amax(gptrt_context *ctx, const float *a,
                                    const float *b, float *c, float *amax,
                                    int64_t batch, int64_t m, int64_t n,
                                    int64_t k, int64_t transA, int64_t transB,
                                    int64_t strideA, int64_t strideB,
                                    int64_t strideC, int64_t rows,
                                    int64_t cols, int64_t outDtype) {
  const TimedCall timed(ctx, "gptrt_matmul_amax");
  gptrt_matmul(ctx, a, b, c, batch, m, n, k, transA, transB, strideA, strideB,
               strideC);
  finish(ctx, "gptrt_matmul_amax", c, {rows, cols, outDtype, amax});
}

GPTRT_EXPORT void gptrt_matmul_cast(
    gptrt_context *ctx, const float *a, const float *b, const float *scale,
    float *c, float *amax, uint8_t *q, int64_t batch, int64_t m, int64_t n,
    int64_t k, int64_t transA, int64_t transB, int64_t strideA,
    int64_t strideB, int64_t strideC, int64_t rows, int64_t cols,
    int64_t outDtype, int64_t format, int64_t transpose, int64_t statSlot) {
  const TimedCall timed(ctx, "gptrt_matmul_cast");
  gptrt_matmul(ctx, a, b, c, batch, m, n, k, transA, transB, strideA, strideB,
               strideC);
  finish(ctx, "gptrt_matmul_cast", c,
         {rows, cols, outDtype, amax, scale, q, format, transpose, statSlot});
}

GPTRT_EXPORT void gptrt_scaled_matmul_amax(
    gptrt_context *ctx, const uint8_t *a, const uint8_t *b,
    const float *scaleA, const float *scaleB, void *c, float *amax,
    int64_t batch, int64_t m, int64_t n, int64_t k, int64_t transA,
    int64_t transB, int64_t strideA, int64_t strideB, int64_t strideC,
    int64_t formatA, int64_t formatB, int64_t fastAccum, int64_t cDtype,
    int64_t rows,
    int64_t cols, int64_t outDtype) {
  const TimedCall timed(ctx, "gptrt_scaled_matmul_amax");
  if (!agreeingDtypes(ctx, "gptrt_scaled_matmul_amax", cDtype, outDtype))
    return;
  gptrt_scaled_matmul(ctx, a, b, scaleA, scaleB, c, batch, m, n, k, transA,
                      transB, strideA, strideB, strideC, formatA, formatB,
                      fastAccum, cDtype);
  finish(ctx, "gptrt_scaled_matmul_amax", c, {rows, cols, outDtype, amax});
}

GPTRT_EXPORT void gptrt_scaled_matmul_cast(
    gptrt_context *ctx, const uint8_t *a, const uint8_t *b,
    const float *scaleA, const float *scaleB, const float *scale, void *c,
    float *amax, uint8_t *q, int64_t batch, int64_t m, int64_t n, int64_t k,
    int64_t transA, int64_t transB, int64_t strideA, int64_t strideB,
    int64_t strideC, int64_t formatA, int64_t formatB, int64_t fastAccum,
    int64_t cDtype,
    int64_t rows, int64_t cols, int64_t outDtype, int64_t format,
    int64_t transpose, int64_t statSlot) {
  const TimedCall timed(ctx, "gptrt_scaled_matmul_cast");
  if (!agreeingDtypes(ctx, "gptrt_scaled_matmul_cast", cDtype, outDtype))
    return;
  gptrt_scaled_matmul(ctx, a, b, scaleA, scaleB, c, batch, m, n, k, transA,
                      transB, strideA, strideB, strideC, formatA, formatB,
                      fastAccum, cDtype);
  finish(ctx, "gptrt_scaled_matmul_cast", c,
         {rows, cols, outDtype, amax, scale, q, format, transpose, statSlot});
}

// ------------------------------------------------------- data parallelism

namespace {

void checkBucketArgs(int64_t n, int64_t fp8Format, int64_t scatter) {
  requireNonNegative(n, "n");
  if (fp8Format != -1)
    requireFormat(fp8Format);
  if (scatter != 0 && scatter != 1)
    throw std::invalid_argument("scatter = " + std::to_string(scatter) +
                                ", expected 0 or 1");
}

} // namespace

GPTRT_EXPORT void gptrt_grad_bucket_ready(gptrt_context *ctx, float *grads,
                                          int64_t n, int64_t bucket,
                                          int64_t fp8Format, int64_t scatter) {
  guarded(ctx, "gptrt_grad_bucket_ready", [&](Context &c) {
    checkBucketArgs(n, fp8Format, scatter);
    if (c.gradientExchange() && c.lastMicroStep())
      c.gradientExchange()->start(grads, n, bucket, fp8Format, scatter == 1,
                                  nullptr);
  }, [&](Context &c, Gpu &g) {
    checkBucketArgs(n, fp8Format, scatter);
    if (!c.gradientExchange() || !c.lastMicroStep())
      return;
    // The bucket must be final before the communication stream reads it:
    // an event after the kernels that wrote it, which that stream waits
    // for on the device, so this thread goes on launching the backward.
    c.gradientExchange()->start(grads, n, bucket, fp8Format, scatter == 1,
                                g.recordBucketEvent(bucket));
  });
}

GPTRT_EXPORT void gptrt_grad_sync(gptrt_context *ctx, float *,
                                  int64_t buckets) {
  guarded(ctx, "gptrt_grad_sync", [&](Context &c) {
    if (c.gradientExchange() && c.lastMicroStep())
      c.gradientExchange()->finish(buckets);
  }, [&](Context &c, Gpu &) {
    if (c.gradientExchange() && c.lastMicroStep())
      c.gradientExchange()->finish(buckets);
  });
}

// ------------------------------------------------------- export check

namespace gptrt {

const std::vector<AbiSymbol> &abiSymbols() {
#define GPTRT_SYM(f) AbiSymbol{#f, reinterpret_cast<void *>(&f)}
  static const std::vector<AbiSymbol> symbols = {
      GPTRT_SYM(gptrt_arena_base),
      GPTRT_SYM(gptrt_step_scalar),
      GPTRT_SYM(gptrt_convert),
      GPTRT_SYM(gptrt_fill),
      GPTRT_SYM(gptrt_accumulate),
      GPTRT_SYM(gptrt_arange),
      GPTRT_SYM(gptrt_embedding_fwd),
      GPTRT_SYM(gptrt_embedding_bwd),
      GPTRT_SYM(gptrt_embedding_bwd_accumulate),
      GPTRT_SYM(gptrt_layernorm_fwd),
      GPTRT_SYM(gptrt_add_layernorm_fwd),
      GPTRT_SYM(gptrt_add_layernorm_fwd_amax),
      GPTRT_SYM(gptrt_add_layernorm_fwd_cast),
      GPTRT_SYM(gptrt_layernorm_bwd),
      GPTRT_SYM(gptrt_matmul),
      GPTRT_SYM(gptrt_matmul_bf16),
      GPTRT_SYM(gptrt_matmul_bf16_bias),
      GPTRT_SYM(gptrt_matmul_bf16_bias_gelu),
      GPTRT_SYM(gptrt_matmul_bf16_dgelu),
      GPTRT_SYM(gptrt_matmul_bf16_bgrad),
      GPTRT_SYM(gptrt_matmul_bf16_accumulate),
      GPTRT_SYM(gptrt_matmul_bf16_bgrad_accumulate),
      GPTRT_SYM(gptrt_bias_add),
      GPTRT_SYM(gptrt_reduce_rows),
      GPTRT_SYM(gptrt_add),
      GPTRT_SYM(gptrt_scale),
      GPTRT_SYM(gptrt_gelu_fwd),
      GPTRT_SYM(gptrt_gelu_bwd),
      GPTRT_SYM(gptrt_copy_blocks),
      GPTRT_SYM(gptrt_permute),
      GPTRT_SYM(gptrt_attention_fwd),
      GPTRT_SYM(gptrt_attention_bwd),
      GPTRT_SYM(gptrt_attention_fwd_packed),
      GPTRT_SYM(gptrt_attention_fwd_packed_amax),
      GPTRT_SYM(gptrt_attention_fwd_packed_cast),
      GPTRT_SYM(gptrt_attention_bwd_packed),
      GPTRT_SYM(gptrt_attention_bwd_packed_amax),
      GPTRT_SYM(gptrt_cross_entropy_fwd),
      GPTRT_SYM(gptrt_cross_entropy_bwd),
      GPTRT_SYM(gptrt_cross_entropy_fwd_bwd),
      GPTRT_SYM(gptrt_cross_entropy_fwd_bwd_amax),
      GPTRT_SYM(gptrt_quantize_fp8_dual_bgrad),
      GPTRT_SYM(gptrt_scale_quantize_fp8),
      GPTRT_SYM(gptrt_scale_quantize_fp8_dual),
      GPTRT_SYM(gptrt_scale_quantize_fp8_dual_bgrad),
      GPTRT_SYM(gptrt_state_quantize_fp8),
      GPTRT_SYM(gptrt_state_quantize_fp8_transposed),
      GPTRT_SYM(gptrt_state_quantize_fp8_transposed_bgrad),
      GPTRT_SYM(gptrt_state_quantize_fp8_dual),
      GPTRT_SYM(gptrt_state_quantize_fp8_dual_bgrad),
      GPTRT_SYM(gptrt_amax_quantize_rows),
      GPTRT_SYM(gptrt_quantize_fp8_transposed_bgrad),
      GPTRT_SYM(gptrt_global_norm),
      GPTRT_SYM(gptrt_clip_scale),
      GPTRT_SYM(gptrt_adamw),
      GPTRT_SYM(gptrt_adamw_multi),
      GPTRT_SYM(gptrt_amax),
      GPTRT_SYM(gptrt_scale_from_amax),
      GPTRT_SYM(gptrt_quantize_fp8),
      GPTRT_SYM(gptrt_quantize_fp8_transposed),
      GPTRT_SYM(gptrt_quantize_fp8_dual),
      GPTRT_SYM(gptrt_scaled_matmul),
      GPTRT_SYM(gptrt_scaled_matmul_bias),
      GPTRT_SYM(gptrt_amax_rows),
      GPTRT_SYM(gptrt_row_scales),
      GPTRT_SYM(gptrt_quantize_rows),
      GPTRT_SYM(gptrt_quantize_rows_transposed),
      GPTRT_SYM(gptrt_quantize_rows_transposed_bgrad),
      GPTRT_SYM(gptrt_scale_quantize_rows_transposed),
      GPTRT_SYM(gptrt_scale_quantize_rows_transposed_bgrad),
      GPTRT_SYM(gptrt_scaled_matmul_rowwise),
      GPTRT_SYM(gptrt_scaled_matmul_rowwise_bias),
      GPTRT_SYM(gptrt_scaled_matmul_accumulate),
      GPTRT_SYM(gptrt_scaled_matmul_rowwise_accumulate),
      GPTRT_SYM(gptrt_fp8_state_scale),
      GPTRT_SYM(gptrt_fp8_state_update),
      GPTRT_SYM(gptrt_fp8_state_update_batch),
      GPTRT_SYM(gptrt_fp8_state_scale_batch),
      GPTRT_SYM(gptrt_convert_amax),
      GPTRT_SYM(gptrt_convert_cast),
      GPTRT_SYM(gptrt_layernorm_fwd_amax),
      GPTRT_SYM(gptrt_layernorm_bwd_amax),
      GPTRT_SYM(gptrt_layernorm_bwd_add),
      GPTRT_SYM(gptrt_layernorm_bwd_add_amax),
      GPTRT_SYM(gptrt_layernorm_bwd_add_cast),
      GPTRT_SYM(gptrt_layernorm_fwd_cast),
      GPTRT_SYM(gptrt_gelu_fwd_amax),
      GPTRT_SYM(gptrt_gelu_fwd_cast),
      GPTRT_SYM(gptrt_gelu_bwd_amax),
      GPTRT_SYM(gptrt_gelu_bwd_cast),
      GPTRT_SYM(gptrt_layernorm_fwd_cast_dual),
      GPTRT_SYM(gptrt_add_layernorm_fwd_cast_dual),
      GPTRT_SYM(gptrt_gelu_fwd_cast_dual),
      GPTRT_SYM(gptrt_gelu_bwd_cast_dual_bgrad),
      GPTRT_SYM(gptrt_add_amax),
      GPTRT_SYM(gptrt_add_cast),
      GPTRT_SYM(gptrt_matmul_amax),
      GPTRT_SYM(gptrt_matmul_cast),
      GPTRT_SYM(gptrt_scaled_matmul_amax),
      GPTRT_SYM(gptrt_scaled_matmul_cast),
      GPTRT_SYM(gptrt_grad_bucket_ready),
      GPTRT_SYM(gptrt_grad_sync),
      GPTRT_SYM(gptrt_global_norm_sharded),
      GPTRT_SYM(gptrt_adamw_sharded),
      GPTRT_SYM(gptrt_gather_params),
  };
#undef GPTRT_SYM
  return symbols;
}

void checkAbiExported() {
  for (const AbiSymbol &s : abiSymbols()) {
    void *found = dlsym(RTLD_DEFAULT, s.name);
    if (found == s.address)
      continue;
    throw std::runtime_error(
        std::string("runtime symbol ") + s.name +
        (found == nullptr ? " is not in the executable's dynamic symbol table"
                          : " resolves to another library's definition") +
        ", expected this runtime's: link the executable with the gptrt CMake "
        "target (it adds -Wl,--dynamic-list=gptrt.dynlist) or with "
        "ENABLE_EXPORTS (-rdynamic), and load no other gptrt");
  }
}

} // namespace gptrt
