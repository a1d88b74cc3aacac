// The CPU run of AbiEpilogue.h's epilogue, and its dispatch after a base
// kernel.
#include "runtime/core/AbiEpilogue.h"

#include <string>

namespace gptrt::abi {

namespace {

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

} // namespace

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

// rt-to-llvm stores a descriptor as int64_t values in field order.
static_assert(sizeof(gptrt_epilogue) % sizeof(int64_t) == 0 &&
                  alignof(gptrt_epilogue) == alignof(int64_t),
              "gptrt_epilogue must be int64_t fields only");

Epilogue EpilogueCall::epilogue() const {
  Epilogue e{descriptor->rows, descriptor->cols, descriptor->out_dtype, amax};
  e.scale = scale;
  e.q = q;
  e.format = descriptor->format;
  e.transpose = descriptor->transpose;
  e.statSlot = descriptor->stat_slot;
  return e;
}

std::optional<EpilogueWork> epilogueWork(gptrt_context *ctx, const char *fn,
                                         const EpilogueCall &call,
                                         const void *output, bool dualCast,
                                         bool biasGradient) {
  const char *problem = nullptr;
  const bool any = call.scale || call.amax || call.q || call.qT || call.db;
  EpilogueWork work = EpilogueWork::None;
  if (!call.descriptor) {
    if (any)
      problem = "epilogue buffers (scale, amax, q, q_t or db) without an "
                "epilogue descriptor";
  } else if (!call.amax) {
    problem = "an epilogue descriptor without its amax buffer";
  } else if ((call.scale == nullptr) != (call.q == nullptr)) {
    problem = "the epilogue's cast needs both scale and q";
  } else if (call.qT && !call.q) {
    problem = "q_t without q";
  } else if (call.db && !call.qT) {
    problem = "db without q_t";
  } else if (call.qT && !dualCast) {
    problem = "q_t, but this producer has no dual-cast epilogue";
  } else if (call.db && !biasGradient) {
    problem = "db, but this producer's epilogue takes no bias gradient";
  } else {
    work = call.qT  ? EpilogueWork::DualCast
           : call.q ? EpilogueWork::Cast
                    : EpilogueWork::Amax;
  }
  if (!problem && (output == nullptr) != (work == EpilogueWork::DualCast))
    problem = output == nullptr
                  ? "no output buffer: only the dual cast (q_t) leaves it out"
                  : "an output buffer with q_t: the dual cast does not store "
                    "the output, pass null";
  if (!problem)
    return work;
  auto refuse = [&] {
    throw std::invalid_argument(
        std::string(problem) +
        " (see the epilogue descriptor in runtime/abi/gptrt_kernels.def)");
  };
  guarded(ctx, fn, [&](Context &) { refuse(); },
          [&](Context &, Gpu &) { refuse(); });
  return std::nullopt;
}

bool coversOutput(gptrt_context *ctx, const char *fn, const gptrt_epilogue *e,
                  int64_t elements, int64_t dtype) {
  if (e == nullptr || (e->rows >= 0 && e->cols >= 0 &&
                       e->rows * e->cols == elements && e->out_dtype == dtype))
    return true;
  auto refuse = [&] {
    throw std::invalid_argument(
        "the epilogue is rows " + std::to_string(e->rows) + " x cols " +
        std::to_string(e->cols) + " of out_dtype " +
        std::to_string(e->out_dtype) + ", expected the whole output: " +
        std::to_string(elements) + " values of dtype " + std::to_string(dtype) +
        " (see the epilogue descriptor in runtime/abi/gptrt_kernels.def)");
  };
  guarded(ctx, fn, [&](Context &) { refuse(); },
          [&](Context &, Gpu &) { refuse(); });
  return false;
}

EpilogueLabels::EpilogueLabels(const char *fn) {
  static const char *const kSuffix[] = {"", "+amax", "+cast", "+dual_cast"};
  for (size_t i = 0; i < names_.size(); ++i)
    names_[i] = std::string(fn) + kSuffix[i];
}

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

} // namespace gptrt::abi
