#!/usr/bin/env bash
# ctest checks of tools/bench/torch_gpt2.py on the CPU (tools/CMakeLists.txt).
#
# usage: test-torch-gpt2.sh smoke|refusals PYTHON SCRIPT
#   smoke     `--device cpu --smoke` exits 0 (the script itself checks the
#             loss fell over 10 steps on one fixed batch) and prints a
#             RESULT line whose JSON has the training keys and a finite
#             final_loss.
#   refusals  what needs a GPU (--variant fp8, --gemm-table,
#             --attention-table) on --device cpu
#             exits 2 with exactly one line "torch_gpt2: ..." and no
#             traceback.
set -u
mode=${1:?usage: test-torch-gpt2.sh smoke|refusals PYTHON SCRIPT}
python=${2:?missing PYTHON}
script=${3:?missing SCRIPT}

fail() { echo "test-torch-gpt2 $mode: $*"; exit 1; }

case $mode in
smoke)
  output=$("$python" "$script" --device cpu --smoke 2>&1)
  rc=$?
  printf '%s\n' "$output"
  [[ $rc == 0 ]] || fail "exit status $rc, expected 0"
  result=$(grep '^RESULT ' <<<"$output" | tail -n 1)
  [[ -n $result ]] || fail "no 'RESULT {json}' line in the output"
  "$python" - "${result#RESULT }" <<'EOF' || fail "the RESULT line is not what the benchmark table reads"
import json, math, sys
r = json.loads(sys.argv[1])
keys = {"framework", "variant", "config", "micro_batch", "seq", "steps", "tokens_per_s", "step_ms", "mfu",
        "peak_mem_gib", "final_loss", "compiled", "warmup_steps", "warmup_loss"}
assert set(r) == keys, "keys %s, expected %s" % (sorted(r), sorted(keys))
assert r["framework"] == "pytorch" and r["config"] == "tiny" and r["variant"] == "fp32", r
assert math.isfinite(r["final_loss"]) and r["tokens_per_s"] > 0 and r["step_ms"] > 0, r
assert r["warmup_steps"] == 0 or math.isfinite(r["warmup_loss"]), r
EOF
  ;;
refusals)
  for args in "--variant fp8" "--gemm-table" "--attention-table"; do
    # shellcheck disable=SC2086 # args is two words on purpose
    output=$("$python" "$script" --device cpu $args 2>&1)
    rc=$?
    printf '%s\n' "$output"
    [[ $rc == 2 ]] || fail "--device cpu $args: exit status $rc, expected 2 (refused)"
    [[ $(wc -l <<<"$output") == 1 ]] || fail "--device cpu $args: expected one line, got the above"
    [[ $output == "torch_gpt2: "* ]] || fail "--device cpu $args: the line should start with 'torch_gpt2: '"
    [[ $output == *"--device cuda"* || $output == *"CUDA"* ]] || fail "--device cpu $args: the line should say CUDA is needed"
  done
  ;;
*)
  fail "unknown mode; expected smoke or refusals"
  ;;
esac
echo "test-torch-gpt2 $mode: passed"
