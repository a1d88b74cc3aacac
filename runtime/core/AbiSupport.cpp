// The out-of-line helpers of AbiSupport.h: the checks and lookups every
// kernel family's file calls.
#include "runtime/core/AbiSupport.h"

#include <cstdio>
#include <cstdlib>

namespace gptrt::abi {

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

float *temporary(Context &c, Temporary purpose, int64_t floats) {
  return c.scratch(static_cast<size_t>(floats), static_cast<unsigned>(purpose));
}

void requireNonNegative(int64_t v, const char *name) {
  if (v < 0)
    throw std::invalid_argument(std::string(name) + " = " + std::to_string(v) +
                                ", expected >= 0");
}

void requireAmax(const float *amax) {
  if (amax == nullptr)
    throw std::invalid_argument(
        "amax is null, expected a pointer to one float for the reduction");
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

void requireGradientDtype(int64_t dtype, const char *name) {
  if (dtype != GPTRT_DTYPE_F32 && dtype != GPTRT_DTYPE_BF16 &&
      dtype != GPTRT_DTYPE_F32_ACCUMULATE)
    throw std::invalid_argument(std::string(name) + " " +
                                std::to_string(dtype) +
                                ", expected f32 (1), bf16 (2) or f32 "
                                "accumulate (257)");
}

void requireFormat(int64_t format) {
  if (format != GPTRT_FP8_E4M3 && format != GPTRT_FP8_E5M2)
    throw std::invalid_argument("fp8 format " + std::to_string(format) +
                                ", expected 0 (E4M3) or 1 (E5M2)");
}

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

} // namespace gptrt::abi
