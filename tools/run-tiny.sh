#!/usr/bin/env bash
# The main job: build gptc, generate the tiny GPT with the DSL, compile
# (parse and verify) it with gptc and print its report.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${GPTC_BUILD_DIR:-$root/build}"

bash "$root/tools/build.sh"
"$build/bin/gpt-model" --preset gpt2-tiny -o "$build/gpt2-tiny.mlir"
"$build/bin/gptc" "$build/gpt2-tiny.mlir" --report
