#!/usr/bin/env python3
"""gpt-bf16-gemm changes where GEMM operands are widened, never the numbers:
the tiny GPT compiled with and without --bf16-gemm trains to bit-identical
losses and gradient norms (every f32 digit in the log), in bf16 and in
fp8-tensorwise with lm_head kept bf16 (--fp8-exclude=lm_head). Also checks
that the rewrite happened (gptc --emit=rt, train_step): every bf16 GEMM
is a matmul_bf16 kernel, and the f32 copies of its operands (convert
kernels) are gone. Prints the CPU step times side by side (not a timed test)."""
import json
import os
import statistics
import subprocess
import sys

import e2e_setup

# (precision flags, GEMMs expected to read bf16: the tiny GPT has 4 blocks
# of 4 linear layers plus lm_head, each with a forward, a grad_input and a
# grad_weight GEMM; attention is its own kernel, not a GEMM here)
CASES = (
    (["--precision=bf16"], 3 * (4 * 4 + 1)),
    (["--precision=fp8-tensorwise", "--fp8-exclude=lm_head"], 3),
)


def main():
    args = e2e_setup.parse_and_prepare(__doc__.splitlines()[0])
    work = args.work
    failures, summary = [], []
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1")
    for flags, gemms in CASES:
        name = flags[0].split("=")[1]
        runs, counts, ms = {}, {}, {}
        for on in ("true", "false"):
            art = "%s/%s-%s.so" % (work, name, on)
            compile_flags = [args.model, *flags, "--bf16-gemm=" + on]
            subprocess.run([args.gptc, *compile_flags, "-o", art], check=True)
            rt = subprocess.run([args.gptc, *compile_flags, "--emit=rt", "-o", "-"],
                                check=True, capture_output=True, text=True).stdout
            train = rt[rt.index("func.func @train_step"):]
            train = train[:train.find("func.func @", 1)]
            counts[on] = (train.count('rt.kernel "matmul_bf16"'),
                          train.count('rt.kernel "convert"'))
            log = art + ".jsonl"
            subprocess.run([args.gptrun, art, "--data", work + "/data/train_*.bin",
                            "--steps", "8", "--lr", "1e-3", "--log", log, "--quiet"],
                           check=True, stdout=subprocess.DEVNULL, env=env)
            with open(log) as f:
                runs[on] = [json.loads(line) for line in f]
            ms[on] = statistics.median(r["step_ms"] for r in runs[on][1:])
        for key in ("loss", "grad_norm"):
            if [r[key] for r in runs["true"]] != [r[key] for r in runs["false"]]:
                failures.append("%s: %s differs with --bf16-gemm: %s vs %s" % (
                    name, key, [r[key] for r in runs["true"]],
                    [r[key] for r in runs["false"]]))
        if counts["true"][0] != gemms or counts["false"][0] != 0:
            failures.append("%s: matmul_bf16 kernels %d with the pass (expected %d), "
                            "%d without (expected 0)" % (
                                name, counts["true"][0], gemms, counts["false"][0]))
        if not counts["true"][1] < counts["false"][1]:
            failures.append("%s: convert kernels %d with the pass, %d without: "
                            "expected fewer" % (name, counts["true"][1], counts["false"][1]))
        summary.append("%s: %d bf16 GEMMs, convert kernels %d -> %d, final loss "
                       "%.7f both, CPU median step %.1f ms -> %.1f ms" % (
                           name, counts["true"][0], counts["false"][1],
                           counts["true"][1], runs["true"][-1]["loss"],
                           ms["false"], ms["true"]))
    if failures:
        print("FAILED: " + "; ".join(failures))
        return 1
    print("PASSED: " + "; ".join(summary))
    return 0


if __name__ == "__main__":
    sys.exit(main())
