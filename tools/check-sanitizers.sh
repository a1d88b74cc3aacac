#!/usr/bin/env bash
# Builds the compiler and the CPU runtime with AddressSanitizer and
# UndefinedBehaviorSanitizer (GCC, -fno-sanitize-recover: the first report
# fails the test) in $GPTC_SANITIZER_BUILD_DIR (default build-asan/) and runs
# the unit tests and the lit suite under them. The CUDA parts are left out
# (GPTC_ENABLE_CUDA=OFF): nvcc's device code is not instrumented. The long
# end-to-end trainings are left out too (-E e2e-|example-): under the
# sanitizers they take hours; `ctest -R e2e-` in that directory runs them.
#   bash tools/check-sanitizers.sh            # build and test
#   bash tools/check-sanitizers.sh -R lit     # only tests matching a regex
# allow_user_poisoning=0: LLVM's BumpPtrAllocator poisons the free part of
# a slab when its inline code is compiled with ASan (in our objects) and
# unpoisons what it hands out, but Debian's libMLIR is not instrumented, so
# its own inline copy hands out poisoned memory from the same slabs: a
# use-after-poison report for every MLIR attribute our code and libMLIR
# both allocate (seen in the MLIR parser on
# dialects/gpt/accumulate_grad.mlir and tools/gptc/bad-model-sizes.test,
# and by the gptc-model fuzzer). Ignoring manual poisoning removes exactly
# those; ASan's own checks stay.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${GPTC_SANITIZER_BUILD_DIR:-$root/build-asan}"

bash "$root/tools/setup.sh"
flags="-fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer"
cmake -G Ninja -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DGPTC_ENABLE_CUDA=OFF \
  -DCMAKE_C_FLAGS="$flags" -DCMAKE_CXX_FLAGS="$flags" \
  -DCMAKE_EXE_LINKER_FLAGS="-fsanitize=address,undefined" \
  -DCMAKE_SHARED_LINKER_FLAGS="-fsanitize=address,undefined" \
  -DLLVM_EXTERNAL_LIT=/usr/lib/llvm-22/bin/lit >/dev/null
ninja -C "$build"
cd "$build"
# Leaks of process-lifetime registries (MLIR's, protobuf's) are not bugs.
export ASAN_OPTIONS="detect_leaks=0:abort_on_error=1:allow_user_poisoning=0"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
if [[ $# -gt 0 ]]; then
  ctest --output-on-failure -j 2 -E '^(gpu\.|e2e-|example-)' "$@"
else
  ctest --output-on-failure -j 2 -E '^(gpu\.|e2e-|example-)'
fi
