#!/usr/bin/env bash
# Benchmark (never a test): one gpt2-tiny training step on the CPU, gptc's
# artifact under gptrun side by side with the same model in PyTorch (fp32,
# micro-batch 4 x 64, AdamW, clipping). Builds nothing: pass the build dir
# (default build/) holding bin/gptc and bin/gptrun. Both sides run 30 steps
# and report the median step time of steps 5..29, skipping warm-up (first
# touches of the 25 MB embedding, allocator growth).
#
# usage: tools/bench-cpu-step.sh [BUILD_DIR]
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="$(cd "${1:-$root/build}" && pwd)"
steps=30
first=5
threads="$(nproc)"
# Debian's PyTorch is under /usr/bin/python3, not the first python3 on PATH.
py=/usr/bin/python3

for tool in gptc gptrun; do
  [ -x "$build/bin/$tool" ] || {
    echo "bench-cpu-step: $build/bin/$tool not found; build first (tools/build.sh)" >&2
    exit 1
  }
done

work="$(mktemp -d "${TMPDIR:-/tmp}/bench-cpu-step.XXXXXX")"
trap 'rm -rf "$work"' EXIT

# Real text, as tools/run-tiny.sh trains on; the values do not change the
# cost, but the shards must hold steps x 257 tokens.
"$py" "$root/tools/make-text-shards.py" "$work/data" --licenses >/dev/null

# fp32 on both sides: the same arithmetic as the PyTorch step.
"$build/bin/gptc" "$root/models/gpt2-tiny.mlir" --precision=fp32 -o "$work/gpt2-tiny.so"
# gptrun's GEMMs are OpenBLAS's (pthread build); give it the threads torch gets.
OPENBLAS_NUM_THREADS="$threads" "$build/bin/gptrun" "$work/gpt2-tiny.so" --device cpu \
  --data "$work/data/train_*.bin" --steps "$steps" --lr 1e-3 --warmup 0 \
  --decay constant --log "$work/gptc.jsonl" --quiet

gptc_ms="$("$py" - "$work/gptc.jsonl" "$first" <<'EOF'
import json, statistics, sys
rows = [json.loads(line) for line in open(sys.argv[1]) if line.strip()]
times = [r["step_ms"] for r in rows if "step_ms" in r and r["step"] >= int(sys.argv[2])]
if not times:
    sys.exit("bench-cpu-step: no step_ms in %s" % sys.argv[1])
print("%.3f" % statistics.median(times))
EOF
)"

torch_line="$("$py" "$root/tools/bench_torch_step.py" --steps "$steps" \
  --first "$first" --threads "$threads")"
torch_ms="$(awk '{print $2}' <<<"$torch_line")"

"$py" - "$gptc_ms" "$torch_ms" "$threads" "$first" "$((steps - 1))" <<'EOF'
import sys
import torch
torch_version = torch.__version__
gptc, torch_ms, threads, lo, hi = float(sys.argv[1]), float(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5]
tokens = 4 * 64
print("gpt2-tiny CPU training step, fp32, 4 x 64 tokens, median of steps %s..%s" % (lo, hi))
print("%-30s %12s %12s" % ("", "step ms", "tokens/s"))
print("%-30s %12.2f %12.0f" % ("gptc (%s threads)" % threads, gptc, tokens / gptc * 1e3))
print("%-30s %12.2f %12.0f" % ("PyTorch %s (%s threads)" % (torch_version, threads),
                               torch_ms, tokens / torch_ms * 1e3))
print("%-30s %12.2f   (gptc time / PyTorch time; < 1 means gptc is faster)"
      % ("ratio gptc / PyTorch", gptc / torch_ms))
EOF
