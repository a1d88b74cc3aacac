#!/bin/bash
# Checks that gptrun carries no DT_NEEDED on libnccl (GPU workers dlopen it,
# DESIGN.md section 5) while it does hold the NCCL communicator (the names
# it resolves with dlsym are in the binary, so the check can tell).
# Usage: check-no-nccl-needed.sh PROGRAM
set -euo pipefail
program=$1
if readelf -d "$program" | grep NEEDED | grep -qi nccl; then
  echo "FAIL: $program needs NCCL directly:"; readelf -d "$program" | grep -i nccl
  exit 1
fi
for symbol in ncclCommInitRank ncclAllReduce libnccl.so.2; do
  if ! grep -qa "$symbol" "$program"; then
    echo "FAIL: $program does not mention $symbol: the NCCL communicator is not in it, so this check proves nothing"
    exit 1
  fi
done
echo "ok: $(basename "$program") has no DT_NEEDED on NCCL and dlopens libnccl.so.2 for GPU workers"
