#!/usr/bin/env bash
# Builds the libFuzzer targets (test/fuzz/) with Debian's clang-22, every
# object instrumented for coverage, AddressSanitizer and
# UndefinedBehaviorSanitizer, in $GPTC_FUZZ_BUILD_DIR (default build-fuzz/),
# and runs each for SECONDS (default 60) from its seeds: gptc's model front
# end (parse, verify, summary, gpt-train-pipeline) seeded from the lit
# inputs and models/, the token-shard reader from a small valid shard, the
# checkpoint reader from a valid checkpoint index. Fixed seed: a run is
# repeatable. A crash stops the run, leaves the input in
# $build/fuzz-crashes/ and fails; each one found becomes a regression test.
#   bash tools/check-fuzz.sh          # 60 s each
#   bash tools/check-fuzz.sh 3600     # an hour each
#   bash tools/check-fuzz.sh 60 shard-reader   # one target
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${GPTC_FUZZ_BUILD_DIR:-$root/build-fuzz}"
seconds="${1:-60}"
only="${2:-}"

bash "$root/tools/setup.sh"
if ! command -v clang++-22 >/dev/null ||
   ! ls /usr/lib/llvm-22/lib/clang/*/lib/linux/libclang_rt.fuzzer-x86_64.a \
        >/dev/null 2>&1; then
  sudo=""
  [[ $(id -u) -eq 0 ]] || sudo=sudo
  $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -q \
    clang-22 libclang-rt-22-dev >/dev/null
fi
flags="-fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer"
cmake -G Ninja -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_C_COMPILER=clang-22 -DCMAKE_CXX_COMPILER=clang++-22 \
  -DGPTC_ENABLE_CUDA=OFF -DGPTC_FUZZ=ON \
  -DCMAKE_C_FLAGS="$flags" -DCMAKE_CXX_FLAGS="$flags" \
  -DCMAKE_EXE_LINKER_FLAGS="-fsanitize=address,undefined" \
  -DCMAKE_SHARED_LINKER_FLAGS="-fsanitize=address,undefined" \
  -DLLVM_EXTERNAL_LIT=/usr/lib/llvm-22/bin/lit >/dev/null
targets=(gptc-model shard-reader checkpoint-reader)
[[ -n "$only" ]] && targets=("$only")
ninja -C "$build" "${targets[@]/#/fuzz-}"

work="$build/fuzz-work"
crashes="$build/fuzz-crashes"
mkdir -p "$work" "$crashes"
# Leaks of process-lifetime registries (MLIR's, protobuf's) are not bugs;
# allow_user_poisoning=0: see tools/check-sanitizers.sh (LLVM's allocator
# poisoning is only in our instrumented objects, not in libMLIR).
export ASAN_OPTIONS="detect_leaks=0:allow_user_poisoning=0"
export UBSAN_OPTIONS="print_stacktrace=1"

seeds_for() {
  local seeds="$work/$1-seeds"
  rm -rf "$seeds" && mkdir -p "$seeds"
  case "$1" in
    gptc-model)
      # Named by their path: several lit files share a name.
      while IFS= read -r file; do
        rel="${file#"$root"/}"
        cp "$file" "$seeds/${rel//\//_}"
      done < <(find "$root/test" "$root/models" -name '*.mlir' -size -64k) ;;
    shard-reader)
      # llm.c's shard: 256 int32 header (magic 20240520, version 1, token
      # count), then uint16 tokens.
      /usr/bin/python3 - "$seeds/valid.bin" <<'PY'
import struct, sys
tokens = [(i * 7919) % 50257 for i in range(64)]
header = [20240520, 1, len(tokens)] + [0] * 253
with open(sys.argv[1], "wb") as f:
    f.write(struct.pack("<256i", *header) + struct.pack("<%dH" % len(tokens), *tokens))
PY
      ;;
    checkpoint-reader)
      # The fuzzer writes the valid index of its fixture's checkpoint here.
      GPTC_FUZZ_WRITE_SEED="$seeds/valid.pb" "$build/bin/fuzz-checkpoint-reader" \
        -runs=1 "$seeds" >/dev/null 2>&1 || true ;;
  esac
  echo "$seeds"
}

failed=0
for target in "${targets[@]}"; do
  seeds="$(seeds_for "$target")"
  corpus="$work/$target-corpus"
  rm -rf "$corpus" && mkdir -p "$corpus"
  echo "fuzz-$target: ${seconds} s from $(ls "$seeds" | wc -l) seeds"
  if ! "$build/bin/fuzz-$target" -max_total_time="$seconds" -seed=1 \
      -max_len=65536 -timeout=30 -rss_limit_mb=4096 -print_final_stats=1 \
      -artifact_prefix="$crashes/$target-" "$corpus" "$seeds" \
      >"$work/$target.log" 2>&1; then
    echo "fuzz-$target: FAILED, the input is in $crashes/ (log: $work/$target.log)"
    tail -40 "$work/$target.log"
    failed=1
  else
    grep -E '^stat::number_of_executed_units|^stat::new_units_added' \
      "$work/$target.log" | sed "s/^/fuzz-$target: /"
  fi
done
exit "$failed"
