// The FP8 output epilogue (amax, cast, dual cast) a producer takes through
// its epilogue descriptor, shared by every producer family's file. The CPU
// runs the base kernel, then the epilogue over its output; the point is
// that a GPU does both in one pass.
#ifndef GPTRT_CORE_ABIEPILOGUE_H
#define GPTRT_CORE_ABIEPILOGUE_H

#include "runtime/core/AbiSupport.h"

#include <array>
#include <optional>
#include <string>

namespace gptrt::abi {

/// The extra work of a fused kernel over its first output (see gptrt.h).
struct Epilogue {
  int64_t rows, cols, dtype;
  float *amax;
  const float *scale = nullptr;  // _cast only, with the fields below
  uint8_t *q = nullptr;
  int64_t format = 0, transpose = 0, statSlot = -1;
};

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

/// What a producer's output epilogue does, from the optional buffers its
/// call passes (the epilogue descriptor in gptrt_kernels.def).
enum class EpilogueWork { None, Amax, Cast, DualCast };

/// A producer call's epilogue: the descriptor and its buffers.
struct EpilogueCall {
  const gptrt_epilogue *descriptor;
  const float *scale = nullptr;
  float *amax = nullptr;
  uint8_t *q = nullptr;
  uint8_t *qT = nullptr;
  void *db = nullptr;

  /// The runner's view (rows, cols, dtype, buffers, format, transpose,
  /// statistics slot) of a call that has a descriptor.
  Epilogue epilogue() const;
};

/// The work `call` asks of the producer `fn` (`output`: its optional
/// output, which only the dual cast leaves null), checked as the rt.kernel
/// verifier checks it: amax with the descriptor, scale with q, q_t with q,
/// db with q_t; `dualCast` / `biasGradient` say whether this producer can
/// take q_t / db. Records the error and returns nullopt otherwise.
std::optional<EpilogueWork> epilogueWork(gptrt_context *ctx, const char *fn,
                                         const EpilogueCall &call,
                                         const void *output, bool dualCast,
                                         bool biasGradient = false);

/// For producers that take the amax their own way: whether the epilogue
/// (if any) covers the whole output, `elements` values of `dtype`.
/// Records the error and returns false otherwise.
bool coversOutput(gptrt_context *ctx, const char *fn, const gptrt_epilogue *e,
                  int64_t elements, int64_t dtype);

/// The names a producer's calls go by in profiles and errors: `fn`, with
/// the epilogue's work after a '+' ("gptrt_gelu_fwd+cast"). Made once per
/// producer (a function-local static), not on each call.
class EpilogueLabels {
public:
  explicit EpilogueLabels(const char *fn);
  const char *operator[](EpilogueWork work) const {
    return names_[static_cast<size_t>(work)].c_str();
  }

private:
  std::array<std::string, 4> names_;
};

/// Runs `epilogue` after the base kernel, unless the base kernel failed.
void finish(gptrt_context *ctx, const char *fn, const void *out,
            const Epilogue &epilogue);

// For kernels with a dtype per operand, the epilogue's out_dtype repeats
// the base kernel's own output dtype: they must agree (the epilogue reads
// what the kernel wrote). Records the error and returns false otherwise.
bool agreeingDtypes(gptrt_context *ctx, const char *fn, int64_t kernelDtype,
                    int64_t outDtype);

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

} // namespace gptrt::abi

#endif // GPTRT_CORE_ABIEPILOGUE_H
