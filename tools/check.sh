#!/usr/bin/env bash
# All tests: build gptc, then run ctest (GoogleTest unit tests and the lit
# suite), then the libFuzzer targets for $GPTC_FUZZ_SECONDS each (default
# 60; 0 skips them) through tools/check-fuzz.sh. GPU tests skip cleanly on
# machines without a GPU.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${GPTC_BUILD_DIR:-$root/build}"

bash "$root/tools/build.sh"
cd "$build"
ctest --output-on-failure -j 2
seconds="${GPTC_FUZZ_SECONDS:-60}"
if [[ "$seconds" != 0 ]]; then
  bash "$root/tools/check-fuzz.sh" "$seconds"
fi
