#!/usr/bin/env bash
# The one GPU check (DESIGN.md section 7): runs every CUDA test, a gptrun
# smoke test and the benchmarks (gptc's GPT-2 124M in bf16 and FP8 next to
# PyTorch's, same GPU, same run) on the GPU machine, prints one table at the
# end and exits non-zero on any failure. Budget: under 8 minutes.
#
# The GPU machine starts bare and has no build of ours, and the whole build
# directory is far over what travels with a device run (64 MiB for the
# working tree and the carried paths together), so the binaries are built
# HERE and packed, compressed:
#
#   here:        tools/device-check.sh --pack [BUILD_DIR]     (default build)
#                -> BUILD_DIR/devcheck/devcheck.tar.gz: test binaries,
#                   gptrun, the shared libraries the GPU image may lack
#                   (OpenBLAS and its Fortran runtime), tiny artifacts
#                   compiled by gptc, data, bench/torch_gpt2.py (the
#                   benchmark's PyTorch side); ~21 MB where the files
#                   themselves are ~66 MB
#   GPU machine: tools/device-check.sh [PACK_DIR]   (default build/devcheck)
#                run with carry: ["build/devcheck"]; the archive is unpacked
#                into /tmp; logs and the gtest XML go to /tmp/device-check.
#                Only 8 files come back from a device run's $OUT, so there
#                the script leaves two: summary.txt (the table) and
#                devcheck-logs.tar.gz (every log), also when it is stopped.
#
# A step's status: PASS, FAIL, TIMEOUT, SKIP (not applicable) or INFO (a
# measurement; never counted as a pass or a failure).
set -u

here=$(cd "$(dirname "$0")/.." && pwd)

# ------------------------------------------------------------------ pack
if [[ "${1:-}" == "--pack" ]]; then
  build=${2:-$here/build}
  dest=$build/devcheck
  pack=$build/devcheck-files
  rm -rf "$pack" "$dest"
  mkdir -p "$pack/bin" "$pack/lib" "$pack/artifacts" "$pack/data"
  for b in gpu-tests runtime-cuda-parity-tests gptrun attention-bench gemm-bench; do
    [[ -x $build/bin/$b ]] || { echo "device-check: $build/bin/$b is missing: build it first (ninja -C $build $b)"; exit 1; }
    cp "$build/bin/$b" "$pack/bin/"
  done
  # Libraries outside glibc/libstdc++/CUDA that the binaries need: the GPU
  # image is not Debian and may not have them.
  for lib in $(ldd "$build/bin/gptrun" "$build/bin/gpu-tests" | awk '/=>/ {print $3}' | sort -u); do
    case $(basename "$lib") in
      libc.so*|libm.so*|libstdc++.so*|libgcc_s.so*|libdl.so*|libpthread.so*|librt.so*|ld-linux*|libcublas*|libcudart*) ;;
      *) cp -L "$lib" "$pack/lib/" ;;
    esac
  done
  # Tiny artifacts: f32, fp8-tensorwise and fp8-rowwise, from the checked-in tiny model.
  "$build/bin/gptc" "$here/models/gpt2-tiny.mlir" -o "$pack/artifacts/tiny.so" || exit 1
  "$build/bin/gptc" "$here/models/gpt2-tiny.mlir" --precision=fp8-tensorwise \
    -o "$pack/artifacts/tiny-fp8.so" || exit 1
  "$build/bin/gptc" "$here/models/gpt2-tiny.mlir" --precision=fp8-rowwise \
    -o "$pack/artifacts/tiny-rowwise.so" || exit 1
  # The data-parallel forms of the GPU workers' exchange (row gptrun-gpus1).
  "$build/bin/gptc" "$here/models/gpt2-tiny.mlir" --zero=1 \
    -o "$pack/artifacts/tiny-zero.so" || exit 1
  "$build/bin/gptc" "$here/models/gpt2-tiny.mlir" --grad-comm=fp8 \
    -o "$pack/artifacts/tiny-gradfp8.so" || exit 1
  # The runs' data: the shards of the license texts the e2e tests train
  # on, made here, so that a pack never depends on which tests ran in this
  # build (a fresh build has none of their outputs).
  python3 "$here/tools/make-text-shards.py" "$pack/data" --licenses >/dev/null ||
    { echo "device-check: could not make the token shards (tools/make-text-shards.py $pack/data --licenses)"; exit 1; }
  # gptc's side of the benchmark: GPT-2 124M at the benchmark's micro-batch
  # in the three precisions the table compares, and its FLOPs per token
  # (gptc --report, nanochat's formula) for MFU. Each .so is ~250 KB: the
  # weights are made at run time.
  bench_micro_batch=${BENCH_MICRO_BATCH:-16}
  for precision in bf16 fp8-tensorwise fp8-delayed; do
    "$build/bin/gptc" "$here/models/gpt2.mlir" --precision=$precision \
      --micro-batch "$bench_micro_batch" -o "$pack/artifacts/gpt2-$precision.so" || exit 1
  done
  "$build/bin/gptc" "$here/models/gpt2.mlir" --micro-batch "$bench_micro_batch" --report -o /dev/null |
    sed -n 's/^FLOPs per token (training): \([0-9,]*\).*/\1/p' | tr -d , >"$pack/artifacts/gpt2.flops_per_token"
  [[ -s $pack/artifacts/gpt2.flops_per_token ]] || { echo "device-check: no FLOPs per token in gptc --report"; exit 1; }
  echo "$bench_micro_batch" >"$pack/artifacts/gpt2.micro_batch"
  # The PyTorch side of the benchmark travels in the pack too: the run step
  # uses this copy, so what was packed is what ran.
  mkdir -p "$pack/bench"
  cp "$here/tools/bench/torch_gpt2.py" "$pack/bench/" || exit 1
  mkdir -p "$dest"
  tar -C "$pack" -czf "$dest/devcheck.tar.gz" . || exit 1
  rm -rf "$pack"
  # What travels: the tracked tree and the archive, under the device's
  # 64 MiB with room to spare.
  archive=$(stat -c %s "$dest/devcheck.tar.gz")
  tree=$(cd "$here" && git ls-files -z | xargs -0 stat -c %s 2>/dev/null |
    awk '{s += $1} END {print s + 0}')
  limit=$((60 * 1024 * 1024))
  echo "device-check: archive $((archive / 1048576)) MiB + tracked tree $((tree / 1048576)) MiB (limit 64 MiB)"
  if (( archive + tree > limit )); then
    echo "device-check: the pack and the tree are over 60 MiB: they would not travel to the GPU machine (64 MiB); pack less"
    exit 1
  fi
  echo "device-check: packed into $dest; on the GPU machine run"
  echo "  tools/device-check.sh ${dest#$here/}   with carry [\"${dest#$here/}\"]"
  exit 0
fi

# ------------------------------------------------------------------- run
pack=${1:-$here/build/devcheck}
if [[ -f $pack/devcheck.tar.gz ]]; then
  unpacked=${TMPDIR:-/tmp}/gptc-devcheck
  rm -rf "$unpacked" && mkdir -p "$unpacked" &&
    tar -C "$unpacked" -xzf "$pack/devcheck.tar.gz" ||
    { echo "device-check: could not unpack $pack/devcheck.tar.gz into $unpacked"; exit 1; }
  pack=$unpacked
fi
[[ -d $pack/bin ]] || { echo "device-check: no pack at $pack: run tools/device-check.sh --pack here first and carry it"; exit 1; }
out=${DEVICE_CHECK_WORK:-/tmp/device-check}
rm -rf "$out" && mkdir -p "$out" || { echo "device-check: cannot make $out"; exit 1; }
start=$(date +%s)

# cuBLASLt comes from the machine's CUDA 13 (541 MB: too large to carry):
# a toolkit's lib64 / targets directory, or the pip wheels PyTorch brought
# (nvidia-cublas 13 installs into site-packages/nvidia/cu13/lib, the CUDA
# 12 wheels into nvidia/cublas/lib).
cublas_dirs=/usr/local/cuda/lib64:/usr/local/cuda/targets/x86_64-linux/lib:/usr/local/cuda/lib
py_cublas=$(python3 - 2>/dev/null <<'EOF'
import os
try:
    import nvidia
except ImportError:
    raise SystemExit
for root in list(nvidia.__path__):
    for sub in ("cu13/lib", "cublas/lib"):
        d = os.path.join(root, sub)
        if os.path.exists(os.path.join(d, "libcublasLt.so.13")):
            print(d)
            raise SystemExit
EOF
)
# NCCL (dlopened by GPU workers): the CUDA image's, else PyTorch's wheel.
if [[ ! -e /usr/local/cuda/lib/libnccl.so.2 && ! -e /usr/local/cuda/lib64/libnccl.so.2 ]]; then
  py_nccl=$(python3 -c 'import nvidia.nccl, os; print(os.path.join(list(nvidia.nccl.__path__)[0], "lib", "libnccl.so.2"))' 2>/dev/null || true)
  [[ -n $py_nccl && -e $py_nccl ]] && export GPTRT_NCCL_LIB=$py_nccl
fi
# PyTorch runs with the machine's own library path: the Debian libraries
# packed for our binaries are not for its wheels.
machine_ld_library_path=${LD_LIBRARY_PATH-}
export LD_LIBRARY_PATH=$pack/lib:$cublas_dirs${py_cublas:+:$py_cublas}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}

names=(); states=(); notes=()
record() { names+=("$1"); states+=("$2"); notes+=("$3"); echo "== $1: $2 $3"; }
# record_failed NAME RC LOG: a step that did not pass, TIMEOUT (rc 124) or
# FAIL, with the exit status and the log's last line; SKIP when run_step
# did not start it because the budget was spent (rc 200).
record_failed() {
  if [[ $2 == 200 ]]; then
    record "$1" SKIP "$(tail -n 1 "$3")"
    return
  fi
  record "$1" "$([[ $2 == 124 ]] && echo TIMEOUT || echo FAIL)" "rc $2: $(tail -n 1 "$3" | cut -c1-110)"
}

# The table, printed last -- and written, with every log, where a device
# run's files come back -- however the script ends: a run stopped at its
# time limit (SIGTERM) still reports the rows it finished.
summary() {
  echo
  echo "device-check summary ($(( $(date +%s) - start )) s; logs in $out${OUT:+, and in \$OUT/devcheck-logs.tar.gz})"
  printf '%-38s %-8s %s\n' STEP STATUS NOTE
  for i in "${!names[@]}"; do
    printf '%-38s %-8s %s\n' "${names[$i]}" "${states[$i]}" "${notes[$i]}"
  done
}
finish() {
  trap - EXIT
  local status=0 i
  for i in "${!states[@]}"; do
    case ${states[$i]} in FAIL|TIMEOUT) status=1 ;; esac
  done
  summary | tee "$out/summary.txt"
  if [[ -n ${OUT:-} && -d $OUT ]]; then
    cp "$out/summary.txt" "$OUT/summary.txt"
    # One archive: the device returns at most 8 files of 16 MiB; a log
    # over 4 MiB (a runaway one) stays behind.
    (cd "$out" && find . -type f -size -4M -print0 |
      tar --null -T - -czf "$OUT/devcheck-logs.tar.gz") ||
      echo "device-check: could not archive the logs into \$OUT"
  fi
  exit $status
}
trap finish EXIT
trap 'record device-check TIMEOUT "stopped by a signal after $(( $(date +%s) - start )) s"; exit 1' TERM INT

# The whole run must fit the device session (DESIGN.md: under 8 minutes):
# a step never runs past the budget, it times out instead (and says so).
budget=${DEVICE_CHECK_BUDGET:-470}

# step NAME TIMEOUT LOG CMD...: runs CMD with a time limit, log under $out.
run_step() {
  local name=$1 limit=$2 log=$out/$3; shift 3
  local left=$(( budget - ($(date +%s) - start) ))
  if (( left < 15 )); then
    echo "budget spent: ${left} s of the ${budget} s left, not started" >"$log"
    echo "== $name: not started, budget spent"
    return 200
  fi
  if (( left < limit )); then
    echo "== $name: limited to ${left} s by the ${budget} s budget"
    limit=$left
  fi
  echo "== $name: $*"
  timeout "$limit" "$@" >"$log" 2>&1
  local rc=$?
  tail -n 25 "$log"
  return $rc
}

# 1. The machine.
gpu=$(nvidia-smi --query-gpu=name,driver_version,compute_cap --format=csv,noheader 2>/dev/null | head -1)
record "gpu" "${gpu:+INFO}" "${gpu:-nvidia-smi gave nothing}"
[[ -n $gpu ]] || states[-1]=FAIL
missing=$(ldd "$pack/bin/gpu-tests" | grep "not found" | tr -s ' \t' ' ')
if [[ -n $missing ]]; then
  record "libraries" FAIL "$missing"
else
  record "libraries" INFO "$(ldd "$pack/bin/gpu-tests" | grep -o 'libcublasLt[^ ]* => [^ ]*' | head -1)${GPTRT_NCCL_LIB:+; NCCL $GPTRT_NCCL_LIB}"
fi

# 2. Host-side FP8/bf16 parity with cuda_fp8.h (no GPU needed; cheap).
run_step parity 120 parity.log "$pack/bin/runtime-cuda-parity-tests"
rc=$?; record "cuda-parity" "$([[ $rc == 0 ]] && echo PASS || { [[ $rc == 124 ]] && echo TIMEOUT || echo FAIL; })" "rc $rc"

# 3. Every CUDA kernel against the CPU reference. A skip here means the
# binary could not open the GPU, a failure on this machine -- except the
# NCCL tests' skip where NCCL cannot be loaded, which the row names.
run_step gpu-tests 150 gpu-tests.log "$pack/bin/gpu-tests" --gtest_output=xml:"$out/gpu-tests.xml"
rc=$?
passed=$(grep -oE '^\[  PASSED  \] [0-9]+' "$out/gpu-tests.log" | grep -oE '[0-9]+$' || echo 0)
failed=$(grep -oE '^\[  FAILED  \] [0-9]+ test' "$out/gpu-tests.log" | grep -oE '[0-9]+' || echo 0)
skipped=$(grep -oE '^\[  SKIPPED \] [0-9]+ test' "$out/gpu-tests.log" | grep -oE '[0-9]+' || echo 0)
ncclSkips=0
grep -q 'cannot load NCCL' "$out/gpu-tests.log" &&
  ncclSkips=$(grep -E '^\[  SKIPPED \] GradientCommGpuTest\.[A-Za-z]+$' "$out/gpu-tests.log" | sort -u | wc -l)
state=PASS
[[ $rc == 0 && $(( ${skipped:-0} - ncclSkips )) == 0 ]] || state=FAIL
[[ $rc == 124 ]] && state=TIMEOUT
note="passed ${passed:-0}, failed ${failed:-0}, skipped ${skipped:-0}"
(( ncclSkips > 0 )) && note+=" ($ncclSkips: NCCL cannot be loaded)"
record "gpu-tests" "$state" "$note"
grep -E '^\[  FAILED  \] [A-Za-z]+\.' "$out/gpu-tests.log" | sort -u | sed 's/^/   /'
fp8err=$(grep -o 'FP8 GEMM vs CPU emulation: worst norm-wise error .*' "$out/gpu-tests.log" | head -1)
fp8err=${fp8err#FP8 GEMM vs CPU emulation: }
[[ -n $fp8err ]] && record "fp8-gemm-error" INFO "$fp8err (tolerances 5e-4, fast accumulation 5e-3)"
# Which rowwise GEMM forms cuBLASLt took with OUTER_VEC_32F scales (gpu
# test RowwiseOuterVecScalesMatchCpuAndTheUnscalingPass): outer-vec can be
# the default where train_step's forms are all taken.
outervec=$(grep -o 'rowwise GEMMs through OUTER_VEC_32F scales: .*' "$out/gpu-tests.log" | head -1 | cut -c1-260)
[[ -n $outervec ]] && record "rowwise-outer-vec-forms" INFO "${outervec#rowwise GEMMs through OUTER_VEC_32F scales: }"

# 4. gptrun --device cuda on the tiny artifacts: 3 training steps. Every
# runtime function has a CUDA version (AbiSupport.h's dispatch requires one),
# so anything but PASS (a crash, a CUDA error) is a FAIL. Loss values are
# in the log: compare with --device cpu.
data=$(ls "$pack"/data/train_*.bin 2>/dev/null | head -1)
lastLoss() { grep -o '"loss": *[-0-9.eE+naif]*' "$1" 2>/dev/null | tail -1 | sed 's/.*: *//'; }
for art in tiny tiny-fp8 tiny-rowwise; do
  if [[ ! -f $pack/artifacts/$art.so || -z $data ]]; then
    record "gptrun-$art" SKIP "artifact or data not packed"; continue
  fi
  # The FP8 runs log their cast statistics every other step too (counted
  # on the device, the rowwise ones included).
  stats=()
  [[ $art != tiny ]] && stats=(--fp8-stats-every 2)
  # The same 3 steps on the CPU first: the losses should agree closely.
  timeout 60 "$pack/bin/gptrun" "$pack/artifacts/$art.so" --device cpu \
    --data "$pack/data/train_*.bin" --steps 3 --seed 7 "${stats[@]}" \
    --log "$out/run-$art-cpu.jsonl" >"$out/gptrun-$art-cpu.log" 2>&1
  run_step "gptrun-$art" 120 "gptrun-$art.log" "$pack/bin/gptrun" "$pack/artifacts/$art.so" \
    --device cuda --data "$pack/data/train_*.bin" --steps 3 --seed 7 "${stats[@]}" \
    --log "$out/run-$art-cuda.jsonl"
  rc=$?
  if [[ $rc == 0 ]]; then
    record "gptrun-$art" PASS "3 steps; loss cuda $(lastLoss "$out/run-$art-cuda.jsonl") cpu $(lastLoss "$out/run-$art-cpu.jsonl")"
  else
    record_failed "gptrun-$art" $rc "$out/gptrun-$art.log"
  fi
done

# 4a. CUDA graphs: the same 3 steps with every entry point replayed as a
# graph after its first call; the kernels are the same, so the losses must
# equal the eager run's bit for bit.
if [[ -f $pack/artifacts/tiny.so && -n $data ]]; then
  run_step gptrun-graphs 120 gptrun-graphs.log "$pack/bin/gptrun" "$pack/artifacts/tiny.so" \
    --device cuda --cuda-graphs on --data "$pack/data/train_*.bin" --steps 3 --seed 7 \
    --log "$out/run-tiny-graphs.jsonl"
  rc=$?
  eager=$(grep -o '"loss": *[-0-9.eE+naif]*' "$out/run-tiny-cuda.jsonl" 2>/dev/null | tr '\n' ' ')
  graphs=$(grep -o '"loss": *[-0-9.eE+naif]*' "$out/run-tiny-graphs.jsonl" 2>/dev/null | tr '\n' ' ')
  if [[ $rc == 0 && -n $graphs && $graphs == "$eager" ]]; then
    record gptrun-graphs PASS "3 steps, losses equal the eager run's: $graphs"
  elif [[ $rc == 0 ]]; then
    record gptrun-graphs FAIL "losses differ from the eager run: graphs [$graphs] eager [$eager]"
  else
    record_failed gptrun-graphs $rc "$out/gptrun-graphs.log"
  fi
else
  record gptrun-graphs SKIP "artifact or data not packed"
fi

# 4b. The tiny GPT 50 steps on the GPU against 50 on the CPU: the loss
# curves within 2% per step (test/e2e/gpu_cpu_parity.py says why).
if [[ -f $pack/artifacts/tiny.so && -n $data ]]; then
  run_step gpu-cpu-parity 150 gpu-cpu-parity.log "${BENCH_PYTHON:-python3}" \
    "$here/test/e2e/gpu_cpu_parity.py" --gptrun "$pack/bin/gptrun" \
    --artifact "$pack/artifacts/tiny.so" --data "$pack/data/train_*.bin" \
    --work "$out/gpu-cpu-parity"
  rc=$?
  note=$(grep -E '^(PASSED|FAILED|SKIPPED)' "$out/gpu-cpu-parity.log" | tail -n 1 | cut -c1-150)
  case $rc in
    0) record gpu-cpu-parity PASS "${note#PASSED: }" ;;
    77) record gpu-cpu-parity SKIP "${note#SKIPPED: }" ;;
    200) record gpu-cpu-parity SKIP "$(tail -n 1 "$out/gpu-cpu-parity.log")" ;;
    124) record gpu-cpu-parity TIMEOUT "over the step's time" ;;
    *) record gpu-cpu-parity FAIL "${note:-rc $rc}" ;;
  esac
else
  record gpu-cpu-parity SKIP "artifact or data not packed"
fi

# 4c. Flash attention (--attention flash, FlashAttention.cu): the tiny
# fp8 artifact keeps attention in bf16, so its 3 steps run the flash
# kernels; the losses must stay within 1% of the baseline kernels' (the
# flash kernels round probabilities to bf16 before PV: close, not equal).
if [[ -f $pack/artifacts/tiny-fp8.so && -n $data ]]; then
  run_step gptrun-flash 120 gptrun-flash.log "$pack/bin/gptrun" "$pack/artifacts/tiny-fp8.so" \
    --device cuda --attention flash --data "$pack/data/train_*.bin" --steps 3 --seed 7 \
    --log "$out/run-tiny-fp8-flash.jsonl"
  rc=$?
  flash=$(lastLoss "$out/run-tiny-fp8-flash.jsonl")
  baseline=$(lastLoss "$out/run-tiny-fp8-cuda.jsonl")
  if [[ $rc == 0 && -n $flash && -n $baseline ]] &&
     awk -v a="$flash" -v b="$baseline" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(d <= 0.01 * (b < 0 ? -b : b)) }'; then
    record gptrun-flash PASS "3 steps, loss $flash (baseline kernels $baseline)"
  elif [[ $rc == 0 ]]; then
    record gptrun-flash FAIL "loss $flash vs baseline kernels $baseline: more than 1% apart"
  else
    record_failed gptrun-flash $rc "$out/gptrun-flash.log"
  fi
else
  record gptrun-flash SKIP "artifact or data not packed"
fi

# 4c'. fp8-rowwise's GEMMs with OUTER_VEC_32F scales inside cuBLASLt
# (--fp8-rowwise-gemm outer-vec) instead of the unscaling pass: the same
# 3 steps of the tiny rowwise artifact within 1% of the unscaling run's
# loss (the products differ by accumulation order only; exact scales).
if [[ -f $pack/artifacts/tiny-rowwise.so && -n $data ]]; then
  run_step gptrun-rowwise-outer-vec 120 gptrun-rowwise-outer-vec.log "$pack/bin/gptrun" \
    "$pack/artifacts/tiny-rowwise.so" --device cuda --fp8-rowwise-gemm outer-vec \
    --data "$pack/data/train_*.bin" --steps 3 --seed 7 --log "$out/run-tiny-rowwise-outer-vec.jsonl"
  rc=$?
  outerVec=$(lastLoss "$out/run-tiny-rowwise-outer-vec.jsonl")
  unscale=$(lastLoss "$out/run-tiny-rowwise-cuda.jsonl")
  if [[ $rc == 0 && -n $outerVec && -n $unscale ]] &&
     awk -v a="$outerVec" -v b="$unscale" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(d <= 0.01 * (b < 0 ? -b : b)) }'; then
    record gptrun-rowwise-outer-vec PASS "3 steps, loss $outerVec (unscaling pass $unscale)"
  elif [[ $rc == 0 ]]; then
    record gptrun-rowwise-outer-vec FAIL "loss $outerVec vs unscaling pass $unscale: more than 1% apart"
  else
    record_failed gptrun-rowwise-outer-vec $rc "$out/gptrun-rowwise-outer-vec.log"
  fi
else
  record gptrun-rowwise-outer-vec SKIP "artifact or data not packed"
fi

# 4d. The GPU worker path: gptrun --gpus 1 launches one worker that takes
# its GPU and joins NCCL. A GPU worker exchanges even alone (world size 1:
# nothing crosses a wire, but the bootstrap, the bucket exchange on NCCL's
# stream and every per-step collective run), so this times communication
# against the step: comm_ms is the buckets' time on NCCL's stream (CUDA
# events), exposed_ms how long after the backward's end the last bucket
# finished. tiny: f32 buckets, whose loss must match the plain --device
# cuda run above; tiny-zero: reduce-scattered buckets (ZeRO-1's form; one
# rank keeps all moments); tiny-gradfp8: buckets sent as E4M3 (loss close,
# not equal). Several GPUs would need a bigger machine.
lastField() { grep -o "\"$2\": *[-0-9.eE+naif]*" "$1" 2>/dev/null | tail -1 | sed 's/.*: *//'; }
for art in tiny tiny-zero tiny-gradfp8; do
  name=gptrun-gpus1${art#tiny}
  if [[ ! -f $pack/artifacts/$art.so || -z $data ]]; then
    record $name SKIP "artifact or data not packed"; continue
  fi
  run_step $name 120 $name.log "$pack/bin/gptrun" "$pack/artifacts/$art.so" \
    --gpus 1 --data "$pack/data/train_*.bin" --steps 3 --seed 7 \
    --log "$out/run-$art-gpus1.jsonl"
  rc=$?
  log=$out/run-$art-gpus1.jsonl
  if [[ $rc == 0 ]]; then
    record $name PASS "3 steps over NCCL; loss $(lastLoss "$log") (plain cuda $(lastLoss "$out/run-tiny-cuda.jsonl")); last step $(lastField "$log" step_ms) ms, comm $(lastField "$log" comm_ms) ms, exposed $(lastField "$log" comm_exposed_ms) ms"
  else
    record_failed $name $rc "$out/$name.log"
  fi
done

# 5. Benchmarks (DESIGN.md section 8): GPT-2 124M tokens/s, bf16 and FP8,
# side by side with PyTorch (+ torch.compile) in the same run.
#
# Order, most telling first, as the budget may cut the last rows (they
# SKIP, "budget spent"): gptc's bf16 and fp8-tensorwise rows, PyTorch's
# 124M bf16 and fp8 (tools/bench/torch_gpt2.py, from the pack; compiled),
# the GEMM and attention tables of both, then gptc's other variants.
# torch.compile of 124M takes one to two minutes per variant, so only 10
# warm-up and 30 timed steps (about 2 s of steps at 16 x 1024 tokens).
# The timeouts are caps for a hung or runaway run, not expected times.
# BENCH_MICRO_BATCH (sequences of 1024 tokens per step): 16 is a safe fill
# of an H100's 80 GB or an H200's 141 GB for 124M, not a tuned one; raise
# it to find the fastest fill, and give gptc the same micro-batch when its
# row arrives.
bench_py=$pack/bench/torch_gpt2.py
bench_python=${BENCH_PYTHON:-python3}
bench_micro_batch=${BENCH_MICRO_BATCH:-16}
# A command line, not a function: run_step hands it to timeout.
torch_python=(env LD_LIBRARY_PATH="$machine_ld_library_path" PYTHONUNBUFFERED=1 "$bench_python")
# The last RESULT line of a training log as "X tok/s, Y ms/step, MFU Z%, loss L".
training_note() {
  "$bench_python" - "$1" <<'EOF'
import json, sys
rows = [json.loads(line[len("RESULT "):]) for line in open(sys.argv[1]) if line.startswith("RESULT ")]
r = rows[-1]
at = ""
if r.get("warmup_loss") is not None:
    at = ", %.4f after %d" % (r["warmup_loss"], r["warmup_steps"])
print("%.0f tok/s, %.2f ms/step, MFU %.1f%%, loss %.4f after %d steps%s (micro-batch %d x %d, peak %.1f GiB)"
      % (r["tokens_per_s"], r["step_ms"], 100 * r["mfu"], r["final_loss"], r.get("warmup_steps", 0) + r["steps"], at,
         r["micro_batch"], r["seq"], r["peak_mem_gib"] or 0.0))
EOF
}
# The GEMM table's RESULT lines as FP8 speed-ups over bf16, geometric mean per config.
gemm_note() {
  "$bench_python" - "$1" <<'EOF'
import json, math, sys
rows = [json.loads(line[len("RESULT "):]) for line in open(sys.argv[1]) if line.startswith("RESULT ")]
parts = []
for config in dict.fromkeys(r["config"] for r in rows):
    mine = [r for r in rows if r["config"] == config]
    def speedup(key):
        return math.exp(sum(math.log(r["bf16_us"] / r[key]) for r in mine) / len(mine))
    parts.append("%s fp8 %.2fx bf16 (%.2fx with cast)" % (config, speedup("fp8_us"), speedup("fp8_with_cast_us")))
print("; ".join(parts) + " (geomean of %d GEMMs)" % len(rows))
EOF
}
# The attention table's RESULT line as forward and backward times.
attention_note() {
  "$bench_python" - "$1" <<'EOF'
import json, sys
r = [json.loads(line[len("RESULT "):]) for line in open(sys.argv[1]) if line.startswith("RESULT ")][-1]
print("SDPA fwd %.0f us, bwd %.0f us (B %d H %d T %d D %d)" % (r["fwd_us"], r["bwd_us"], r["batch"], r["heads"],
                                                            r["seq"], r["head_dim"]))
EOF
}
# attention-bench's RESULT line, and its ratio to PyTorch's (JSON, may be
# empty) as torch time / ours: above 1 means ours is faster.
attention_ratio_note() {
  "$bench_python" - "$1" "$2" <<'EOF'
import json, sys
ours = [json.loads(l[len("RESULT "):]) for l in open(sys.argv[1]) if l.startswith("RESULT ")][-1]
note = "fwd %.0f us, bwd %.0f us" % (ours["fwd_us"], ours["bwd_us"])
if sys.argv[2]:
    torch = json.loads(sys.argv[2])
    note += "; SDPA/ours time: fwd %.2fx, bwd %.2fx" % (torch["fwd_us"] / ours["fwd_us"],
                                                       torch["bwd_us"] / ours["bwd_us"])
print(note)
EOF
}
# bench_row NAME LOG RC NOTE_FUNCTION: one table row from a finished run.
# Exit status 2 with a last line "torch_gpt2: ..." is the script refusing
# (this machine or its torch lacks what the run needs): not applicable
# here, so SKIP with that line. argparse's usage errors exit 2 too, but
# print "torch_gpt2.py: error: ...": those are failures.
bench_row() {
  local name=$1 log=$2 rc=$3 note_fn=$4 note
  if [[ $rc == 0 ]] && grep -q '^RESULT ' "$log"; then
    if note=$("$note_fn" "$log" 2>&1); then
      record "$name" PASS "$(tail -n 1 <<<"$note")"
    else
      record "$name" FAIL "its RESULT does not read: $(tail -n 1 <<<"$note" | cut -c1-100)"
    fi
  elif [[ $rc == 2 ]] && tail -n 1 "$log" | grep -q '^torch_gpt2: '; then
    record "$name" SKIP "$(tail -n 1 "$log" | cut -c1-160)"
  else
    record_failed "$name" $rc "$log"
  fi
}

# gptc side: the packed GPT-2 124M artifacts, one optimizer step per
# micro-batch (--total-batch-tokens = micro-batch x 1024), on the packed
# GPT-2-token shard, 10 steps (PyTorch's warm-up count, on the same
# shard: its rows report the loss there too, so the losses compare);
# speed from the median step after 3 warm-up steps, without the 10th:
# every runtime call of it is timed (--profile-step), its table in the
# row's log and its three longest functions in the note, for where the
# time goes. Attention is the O(T^2) baseline except in the -flash row;
# CUDA graphs are off except in the -graphs rows (both defaults wait for
# this run's checks; the -graphs rows show the launches the graphs save
# against the eager row of the same artifact); the weights are cast once
# per step (cast_weights), as every step is one micro-step here. The
# rows run in two groups: bf16 and fp8-tensorwise first (the headline
# numbers), the variants after PyTorch's rows.
gptc_note() {
  "$bench_python" - "$1" "$2" "$3" "$4" <<'EOF'
import json, statistics, sys
log, flops, tokens, peak = sys.argv[1], float(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4])
rows = [json.loads(line) for line in open(log)]
timed = [r for r in rows if not r.get("profiled")]
ms = statistics.median(r["step_ms"] for r in timed[3:] or timed)
tps = tokens / (ms / 1e3)
top = ""
for r in rows:
    if r.get("profile"):
        total = sum(p["ms"] for p in r["profile"]) or 1
        top = "; top " + ", ".join("%s %.0f%%" % (p["function"][len("gptrt_"):], 100 * p["ms"] / total)
                                   for p in r["profile"][:3])
print("%.0f tok/s, %.2f ms/step, MFU %.1f%%, loss %.4f after %d steps%s" % (tps, ms, 100 * flops * tps / peak, rows[-1]["loss"], len(rows), top))
EOF
}
bench_peak=${BENCH_PEAK_FLOPS:-989e12}  # H100/H200 dense bf16, as torch_gpt2.py
gptc_flops=$(cat "$pack/artifacts/gpt2.flops_per_token" 2>/dev/null)
gptc_micro_batch=$(cat "$pack/artifacts/gpt2.micro_batch" 2>/dev/null)
# gptc_rows VARIANT...: bf16-flash is the bf16 artifact with --attention
# flash (FlashAttention.cu); -graphs: with --cuda-graphs on (the profiled
# 10th step still runs eagerly).
gptc_rows() {
local variant precision attention graphs name art tokens rc note
for variant in "$@"; do
  precision=${variant%-flash}
  precision=${precision%-graphs}
  attention=baseline
  [[ $variant == *-flash ]] && attention=flash
  graphs=off
  [[ $variant == *-graphs ]] && graphs=on
  name=bench-gptc-124m-$variant
  art=$pack/artifacts/gpt2-$precision.so
  if [[ ! -f $art || -z $data || -z $gptc_flops ]]; then
    record "$name" FAIL "artifact, FLOPs or data not packed: rerun tools/device-check.sh --pack"; continue
  fi
  tokens=$(( gptc_micro_batch * 1024 ))
  run_step "$name" 60 "$name.log" "$pack/bin/gptrun" "$art" --device cuda \
    --attention "$attention" --cuda-graphs "$graphs" \
    --data "$pack/data/train_*.bin" --steps 10 --profile-step 10 --seed 7 \
    --decay constant --total-batch-tokens "$tokens" --quiet \
    --log "$out/$name.jsonl"
  rc=$?
  if [[ $rc != 0 ]]; then
    record_failed "$name" $rc "$out/$name.log"
  elif note=$(gptc_note "$out/$name.jsonl" "$gptc_flops" "$tokens" "$bench_peak" 2>&1); then
    record "$name" PASS "$(tail -n 1 <<<"$note")"
  else
    record "$name" FAIL "its log does not read: $(tail -n 1 <<<"$note" | cut -c1-100)"
  fi
done
}
gptc_rows bf16 fp8-tensorwise


torch_skip=""
if ! command -v "$bench_python" >/dev/null; then
  torch_skip="$bench_python not on PATH"
elif ! "${torch_python[@]}" -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' >/dev/null 2>&1; then
  torch_skip="no torch with CUDA under $bench_python"
fi
if [[ -n $torch_skip ]]; then
  for name in bench-torch-124m-bf16 bench-torch-124m-fp8 bench-torch-gemm bench-torch-attention; do
    record "$name" SKIP "$torch_skip"
  done
elif [[ ! -f $bench_py ]]; then
  record "bench-torch" FAIL "$bench_py missing: the pack predates it; rerun tools/device-check.sh --pack"
else
  # On the packed shard, as gptc's rows: the loss after the 10 warm-up
  # steps compares with theirs. The fp8 variant compiles 49 autograd
  # Functions and their casts: more time.
  torch_data=()
  [[ -n $data ]] && torch_data=(--data "$pack/data/train_*.bin")
  for variant in bf16 fp8; do
    run_step "bench-torch-124m-$variant" $([[ $variant == fp8 ]] && echo 150 || echo 120) \
      "bench-torch-124m-$variant.log" \
      "${torch_python[@]}" "$bench_py" --config 124m --variant "$variant" \
      --micro-batch "$bench_micro_batch" --warmup 10 --steps 30 "${torch_data[@]}"
    rc=$?
    bench_row "bench-torch-124m-$variant" "$out/bench-torch-124m-$variant.log" $rc training_note
  done
  run_step bench-torch-gemm 60 bench-torch-gemm.log \
    "${torch_python[@]}" "$bench_py" --gemm-table --micro-batch "$bench_micro_batch"
  rc=$?
  bench_row bench-torch-gemm "$out/bench-torch-gemm.log" $rc gemm_note
  run_step bench-torch-attention 60 bench-torch-attention.log \
    "${torch_python[@]}" "$bench_py" --attention-table --gemm-configs 124m \
    --micro-batch "$bench_micro_batch"
  rc=$?
  bench_row bench-torch-attention "$out/bench-torch-attention.log" $rc attention_note
fi

# gptc's side of the per-GEMM table (tools/bench/gemm_bench.cpp): the same
# 124M and 774M shapes through our cuBLASLt path, bf16 against FP8 in the
# layouts train_step uses; the note gives FP8's speed-up over our bf16 and,
# when PyTorch's table ran above, PyTorch's time over ours per precision
# (geometric means per config; above 1 means ours is faster).
gemm_compare_note() {
  "$bench_python" - "$1" "$2" <<'EOF'
import json, math, sys
def rows(path):
    try:
        return [json.loads(line[len("RESULT "):]) for line in open(path) if line.startswith("RESULT ")]
    except OSError:
        return []
ours = [r for r in rows(sys.argv[1]) if r.get("kind") == "gemm"]
launch = [r for r in rows(sys.argv[1]) if r.get("kind") == "launch"]
torch = {(r["config"], r["name"]): r for r in rows(sys.argv[2]) if "config" in r}
def geomean(values):
    return math.exp(sum(math.log(v) for v in values) / len(values))
parts = []
for config in dict.fromkeys(r["config"] for r in ours):
    mine = [r for r in ours if r["config"] == config]
    part = "%s fp8 %.2fx bf16 (%.2fx with cast)" % (
        config, geomean([r["bf16_us"] / r["fp8_us"] for r in mine]),
        geomean([r["bf16_us"] / r["fp8_with_cast_us"] for r in mine]))
    both = [(r, torch[(config, r["name"])]) for r in mine if (config, r["name"]) in torch]
    if both:
        part += ", torch/ours bf16 %.2f fp8 %.2f" % (
            geomean([t["bf16_us"] / r["bf16_us"] for r, t in both]),
            geomean([t["fp8_us"] / r["fp8_us"] for r, t in both]))
    # fp8-rowwise's GEMM: the OUTER_VEC_32F path over the unscaling one,
    # where cuBLASLt took it.
    taken = [r for r in mine if r.get("outer_vec_taken")]
    if taken:
        part += ", rowwise outer-vec %.2fx unscale (%d of %d GEMMs taken)" % (
            geomean([r["fp8_rowwise_us"] / r["fp8_rowwise_outer_vec_us"] for r in taken]),
            len(taken), len(mine))
    elif any("outer_vec_taken" in r for r in mine):
        part += ", rowwise outer-vec refused by cuBLASLt"
    parts.append(part)
# Each FP8 GEMM launches a one-thread kernel for its scale reciprocals:
# 147 FP8 GEMMs per GPT-2 124M micro-step (12 blocks x 4 linears x 3 + lm_head's 3).
if launch:
    us = launch[0]["one_thread_kernel_us"]
    parts.append("one-thread kernel %.1f us (x147 per 124M fp8 micro-step: %.2f ms)" % (us, 147 * us / 1e3))
print("; ".join(parts) + " (geomean of %d GEMMs; max rel err %.3f)" % (
    len(ours), max(r["rel_err"] for r in ours)))
EOF
}
name=bench-gptc-gemm
if [[ ! -x $pack/bin/gemm-bench ]]; then
  record "$name" FAIL "gemm-bench not packed: rerun tools/device-check.sh --pack"
else
  run_step "$name" 60 "$name.log" "$pack/bin/gemm-bench" --configs 124m,774m \
    --micro-batch "$bench_micro_batch"
  rc=$?
  if [[ $rc == 0 ]] && grep -q '^RESULT ' "$out/$name.log"; then
    record "$name" PASS "$(gemm_compare_note "$out/$name.log" "$out/bench-torch-gemm.log" 2>&1 | tail -n 1)"
  else
    record_failed "$name" $rc "$out/$name.log"
  fi
fi

# gptc's attention kernels at the same shape (GPT-2 124M: micro-batch x 12
# heads x 1024 x 64, causal, bf16), baseline and flash, each as a ratio to
# PyTorch's SDPA above when that ran (item 3 of the CUDA issue).
torch_attention=$(grep '^RESULT ' "$out/bench-torch-attention.log" 2>/dev/null | tail -n 1)
for kernel in baseline flash; do
  name=bench-gptc-attention-$kernel
  if [[ ! -x $pack/bin/attention-bench ]]; then
    record "$name" FAIL "attention-bench not packed: rerun tools/device-check.sh --pack"; continue
  fi
  run_step "$name" 60 "$name.log" "$pack/bin/attention-bench" --kernel "$kernel" \
    --batch "$bench_micro_batch" --seq 1024 --heads 12 --head-dim 64
  rc=$?
  if [[ $rc == 0 ]] && grep -q '^RESULT ' "$out/$name.log"; then
    record "$name" PASS "$(attention_ratio_note "$out/$name.log" "${torch_attention#RESULT }" 2>&1 | tail -n 1)"
  else
    record_failed "$name" $rc "$out/$name.log"
  fi
done

# The rest of gptc's rows: flash attention, CUDA graphs, delayed scaling.
gptc_rows bf16-flash bf16-graphs fp8-tensorwise-graphs fp8-delayed

# 6. (last, so the benchmarks above always get their time) The GPU
# tests under compute-sanitizer memcheck (works on the Firecracker machines
# per the device notes): out-of-bounds accesses and unwritten reads that a
# parity test can miss. Large sizes and NCCL are filtered out to fit the
# budget; whatever budget is left bounds it, and under 30 s it is skipped.
memcheckLeft=$(( budget - ($(date +%s) - start) ))
if ! command -v compute-sanitizer >/dev/null; then
  record "memcheck" SKIP "compute-sanitizer not on PATH"
elif (( memcheckLeft < 30 )); then
  # Not a failure: the rows above used the budget (each says so if cut).
  record "memcheck" SKIP "only ${memcheckLeft} s of the ${budget} s budget left"
else
  run_step memcheck 200 memcheck.log compute-sanitizer --tool memcheck --error-exitcode 3 \
    "$pack/bin/gpu-tests" --gtest_filter='-*MatmulBf16*:*ScaledMatmulFp8*:GradientCommGpuTest.*'
  rc=$?
  if [[ $rc != 0 && $rc != 200 ]] && grep -q 'Device not supported' "$out/memcheck.log"; then
    # gVisor machines: compute-sanitizer refuses the GPU (device notes).
    record "memcheck" SKIP "compute-sanitizer: device not supported on this machine"
  elif [[ $rc == 200 ]]; then
    record_failed "memcheck" $rc "$out/memcheck.log"
  else
    record "memcheck" "$([[ $rc == 0 ]] && echo PASS || { [[ $rc == 124 ]] && echo TIMEOUT || echo FAIL; })" \
      "rc $rc, $(grep -c 'Invalid' "$out/memcheck.log") invalid accesses"
  fi
fi

# ---------------------------------------------------------------- table
# finish (the EXIT trap) prints the table, archives the logs and sets the
# exit status.
exit 0
