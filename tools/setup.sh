#!/usr/bin/env bash
# Installs every Debian package gptc needs to build and test (DESIGN.md section 2).
# Idempotent: packages already present are skipped, and apt runs only when
# something is missing.
set -euo pipefail

packages=(
  # build
  cmake ninja-build ccache g++ pkg-config
  # MLIR / LLVM 22, lit and FileCheck
  libmlir-22-dev mlir-22-tools llvm-22-dev llvm-22-tools
  # runtime libraries
  libopenblas-dev libopenblas0-pthread libprotobuf-dev protobuf-compiler libgloo-dev
  # unit tests and benchmarks
  libgtest-dev libgmock-dev libbenchmark-dev
  # PyTorch CPU reference for parity tests (test-only)
  python3-torch python3-numpy
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
    missing+=("$p")
  fi
done

if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  sudo_cmd=()
  [ "$(id -u)" = 0 ] || sudo_cmd=(sudo)
  "${sudo_cmd[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
else
  echo "setup: all Debian packages present"
fi
