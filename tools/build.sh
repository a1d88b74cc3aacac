#!/usr/bin/env bash
# Installs what gptc needs (tools/setup.sh), then configures and builds it in
# $GPTC_BUILD_DIR (default: build/). Used by run-tiny.sh and check.sh.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${GPTC_BUILD_DIR:-$root/build}"

bash "$root/tools/setup.sh"
cmake -G Ninja -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release \
  -DLLVM_EXTERNAL_LIT=/usr/lib/llvm-22/bin/lit >/dev/null
ninja -C "$build"
