// Epilogue descriptors (gptrt_epilogue, runtime/abi/gptrt_kernels.def) for
// tests that call a producer with its FP8 output epilogue directly.
#ifndef GPTRT_TEST_UNIT_RUNTIME_EPILOGUE_H
#define GPTRT_TEST_UNIT_RUNTIME_EPILOGUE_H

#include "runtime/abi/gptrt.h"

#include <deque>

namespace gptrt::test {

/// A descriptor that lives until the test binary exits (kernels take a
/// pointer): the producer's output as rows x cols of out_dtype, then the
/// cast's format, transpose and statistics slots, and a bias gradient's
/// dtype.
inline const gptrt_epilogue *epilogue(int64_t rows, int64_t cols,
                                      int64_t outDtype, int64_t format = 0,
                                      int64_t transpose = 0,
                                      int64_t statSlot = -1,
                                      int64_t statSlotT = -1,
                                      int64_t dbDtype = 0) {
  static thread_local std::deque<gptrt_epilogue> kept;
  kept.push_back(gptrt_epilogue{rows, cols, outDtype, format, transpose,
                                statSlot, statSlotT, dbDtype});
  return &kept.back();
}

} // namespace gptrt::test

#endif // GPTRT_TEST_UNIT_RUNTIME_EPILOGUE_H
