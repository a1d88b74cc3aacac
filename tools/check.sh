#!/usr/bin/env bash
# All tests: build gptc, then run ctest (GoogleTest unit tests and the lit
# suite). GPU tests skip cleanly on machines without a GPU.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${GPTC_BUILD_DIR:-$root/build}"

bash "$root/tools/build.sh"
cd "$build"
ctest --output-on-failure -j 2
