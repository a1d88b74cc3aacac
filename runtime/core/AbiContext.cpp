// gptrt_* functions that read the Context itself (arena bases, step
// scalars) rather than run a kernel.
#include "runtime/core/AbiSupport.h"

#include <utility>

using namespace gptrt::abi;

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
