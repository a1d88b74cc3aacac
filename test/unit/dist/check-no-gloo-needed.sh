#!/bin/bash
# Checks that a program linking the runtime's distributed library carries no
# DT_NEEDED on libgloo (Gloo is dlopened only when used, DESIGN.md section
# 5), while libgptrt-gloo.so itself does need it (so the check can tell).
# Usage: check-no-gloo-needed.sh PROGRAM LIBGPTRT_GLOO
set -euo pipefail
program=$1 plugin=$2
needed=$(readelf -d "$program" | grep NEEDED) || {
  echo "FAIL: readelf shows no NEEDED entries in $program"; exit 1; }
if grep -qi gloo <<<"$needed"; then
  echo "FAIL: $program needs Gloo directly:"; grep -i gloo <<<"$needed"; exit 1
fi
if ! readelf -d "$plugin" | grep NEEDED | grep -q 'libgloo\.so'; then
  echo "FAIL: $plugin does not need libgloo.so, so this check proves nothing"
  exit 1
fi
if readelf -d "$plugin" | grep NEEDED | grep -qi 'gptrt\|protobuf\|MLIR\|LLVM'; then
  echo "FAIL: $plugin links more than Gloo:"; readelf -d "$plugin" | grep NEEDED
  exit 1
fi
exported=$(nm -D --defined-only "$plugin" | awk '$2 == "T" {print $3}')
if [ "$exported" != gptrt_gloo_create ]; then
  echo "FAIL: $plugin should export only gptrt_gloo_create, exports:"
  echo "$exported"; exit 1
fi
echo "ok: $(basename "$program") has no DT_NEEDED on Gloo; $(basename "$plugin") needs $(readelf -d "$plugin" | grep -o 'libgloo[^]]*') and exports only gptrt_gloo_create"
