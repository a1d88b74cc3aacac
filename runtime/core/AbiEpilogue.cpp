// The CPU run of AbiEpilogue.h's epilogue, and its dispatch after a base
// kernel.
#include "runtime/core/AbiEpilogue.h"

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
