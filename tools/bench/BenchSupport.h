// What gptc's benchmark tools (attention-bench, gemm-bench) share: their
// one-line refusals and exit codes, flag values, arena sizing and the
// timing loop. Each tool defines kBenchName, the name its messages start
// with.
#ifndef GPTC_TOOLS_BENCH_BENCHSUPPORT_H
#define GPTC_TOOLS_BENCH_BENCHSUPPORT_H

#include "runtime/core/Context.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

extern const char *const kBenchName;

namespace gptc::bench {

// One line on stderr and exit: 2 refused (bad flags, no GPU), 1 failed.
[[noreturn]] inline void refuse(const std::string &why, int code = 2) {
  std::fprintf(stderr, "%s: %s\n", kBenchName, why.c_str());
  std::exit(code);
}

inline int64_t positive(const std::string &flag, const char *text) {
  char *end = nullptr;
  long long v = std::strtoll(text, &end, 10);
  if (!end || *end || v <= 0)
    refuse(flag + " '" + text + "': expected a positive integer");
  return v;
}

// Bytes rounded up to the 256-byte alignment of the tools' arena slices.
inline size_t aligned(size_t bytes) { return (bytes + 255) / 256 * 256; }

// Microseconds per call: the median over `repeats` of `iters` calls
// between two device synchronisations, after one warm-up call (plans,
// scratch, shared-memory attributes).
inline double timeCalls(gptrt::Context &ctx, int iters, int repeats,
                        const std::function<void()> &call) {
  call();
  ctx.synchronize();
  std::vector<double> us;
  for (int r = 0; r < repeats; ++r) {
    const auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < iters; ++i)
      call();
    ctx.synchronize();
    const std::chrono::duration<double, std::micro> took =
        std::chrono::steady_clock::now() - start;
    us.push_back(took.count() / iters);
  }
  std::sort(us.begin(), us.end());
  return us[us.size() / 2];
}

// Refuses an exception out of the runtime: 2 when there is no GPU to run
// on, 1 for anything else.
[[noreturn]] inline void refuseError(const std::string &what) {
  const bool noGpu =
      what.find("no CUDA device") != std::string::npos ||
      what.find("not built into this runtime") != std::string::npos;
  refuse(what, noGpu ? 2 : 1);
}

} // namespace gptc::bench

#endif // GPTC_TOOLS_BENCH_BENCHSUPPORT_H
