#!/usr/bin/env bash
# The main job: build gptc, compile the tiny GPT into an artifact and train it
# on the built-in corpus with gptrun. The corpus, until the GPT-2 tokenizer
# lands, is the English license texts every Debian machine ships
# (/usr/share/common-licenses), one token per byte; GPL-3 is held out for
# validation. Runs on the CPU (the CUDA runtime comes with its own issue).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${GPTC_BUILD_DIR:-$root/build}"
steps="${GPTC_STEPS:-200}"

bash "$root/tools/build.sh"
python3 "$root/tools/make-text-shards.py" "$build/data/licenses" --licenses

"$build/bin/gptc" "$root/models/gpt2-tiny.mlir" --report -o "$build/gpt2-tiny.so"
"$build/bin/gptrun" "$build/gpt2-tiny.so" --device cpu \
  --data "$build/data/licenses/train_*.bin" \
  --val-data "$build/data/licenses/val_*.bin" \
  --steps "$steps" --lr 1e-3 --warmup 10 --eval-every 50 \
  --log "$build/gpt2-tiny.jsonl"
echo "metrics: $build/gpt2-tiny.jsonl"
