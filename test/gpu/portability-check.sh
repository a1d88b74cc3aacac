#!/usr/bin/env bash
# Portability of the GPU build (DESIGN.md section 5): a training binary
# must start on a machine that has only the NVIDIA driver, the CUDA 13
# libraries and glibc/libstdc++. Checks the direct (readelf -d NEEDED) and
# transitive (ldd) shared-library dependencies of each binary given against
# this allow-list:
#   glibc and the compiler runtime   libc, libm, libdl, libpthread, librt,
#                                    ld-linux, libstdc++, libgcc_s
#   the CUDA 13 toolkit              libcublasLt.so.13 (linked dynamically:
#                                    its static archive is ~0.5 GB). The CUDA
#                                    runtime is static (no libcudart), and the
#                                    driver (libcuda.so.1) is dlopen'ed by it,
#                                    so it must NOT be a NEEDED entry: without
#                                    a driver the binary still starts and says
#                                    "no CUDA device found".
#   known exception, reported        libopenblas.so.0 and what it pulls in
#                                    (libgfortran, libquadmath): the CPU
#                                    kernels' GEMM (DESIGN.md section 2) is
#                                    linked into every binary with the
#                                    runtime, GPU builds included. A GPU-only
#                                    machine needs it installed or carried
#                                    (tools/device-check.sh --pack carries
#                                    it). Listed, not hidden, until the CPU
#                                    backend is loaded only when used.
# Anything else (protobuf, gloo, NCCL, libcudart.so, libcuda.so, ...) fails.
set -u
status=0
for bin in "$@"; do
  echo "== $(basename "$bin")"
  needed=$(readelf -d "$bin" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p')
  all=$( (echo "$needed"; ldd "$bin" | awk '{print $1}') | grep -v '^linux-vdso' | sed 's|.*/||' | sort -u)
  for lib in $all; do
    direct=$(grep -qxF "$lib" <<<"$needed" && echo direct || echo indirect)
    case $lib in
      libc.so.6|libm.so.6|libdl.so.2|libpthread.so.0|librt.so.1|ld-linux-x86-64.so.2|libstdc++.so.6|libgcc_s.so.1)
        verdict="allowed (glibc / compiler runtime)" ;;
      libcublasLt.so.13)
        verdict="allowed (CUDA 13 toolkit)" ;;
      libopenblas.so.0|libgfortran.so.5|libquadmath.so.0)
        verdict="KNOWN EXCEPTION (OpenBLAS for the CPU kernels)" ;;
      *)
        verdict="NOT ALLOWED"; status=1 ;;
    esac
    printf '  %-24s %-9s %s\n' "$lib" "$direct" "$verdict"
  done
  if grep -qE '^libcuda\.so|^libcudart\.so' <<<"$needed"; then
    echo "  the CUDA driver or runtime is a NEEDED entry: expected cudart_static"
    status=1
  fi
done
[[ $status == 0 ]] && echo "portability: OK (OpenBLAS reported above as a known exception)" \
  || echo "portability: FAILED: a dependency outside the allow-list (see above)"
exit $status
