#!/usr/bin/env python3
"""rt-cache-weight-casts moves the parameters' bf16 and FP8 casts out of
train_step into cast_weights, which the runtime runs once per optimizer
step (and after anything that writes the parameters): the tiny GPT
compiled with and without it (--cache-weight-casts=false) trains with two
micro-steps per step, evaluates and samples to the same log, every f32
digit of the losses, validation losses, FP8 statistics and samples equal,
under bf16, fp8-tensorwise, fp8-delayed (also with
--fp8-weight-scaling=current) and fp8-rowwise. Also checks that the pass
acted (gptc --emit=rt): train_step has fewer kernels, none of its
converts or FP8 casts reads a parameter directly, and cast_weights writes
a weight_cache arena (delayed scaling keeps its FP8 casts of the weights,
whose scales train_step updates, unless the weights are scaled from their
own amax)."""
import json
import re
import subprocess
import sys

import e2e_setup

# Keys of a JSONL record that measure time, not numerics.
TIMING = {"tokens_per_s", "step_ms", "mfu", "eta_s", "elapsed_s",
          "comm_ms", "exposed_comm_ms"}


def functions(rt):
    """Kernels per function of an --emit=rt module, and the SSA names of
    each function's views of the parameters."""
    kernels, params = {}, {}
    for name, body in re.findall(r"func\.func @(\w+)\(\).*?\{\n(.*?)\n  \}",
                                 rt, re.S):
        kernels[name] = re.findall(r'rt\.kernel "(\w+)" ins\(([^:)]*)', body)
        params[name] = set(re.findall(r"(%\w+) = rt\.view @params\[", body))
    return kernels, params


def main():
    args = e2e_setup.parse_and_prepare(__doc__.splitlines()[0])
    work = args.work
    failures, summary = [], []
    casts = {"convert", "amax", "quantize_fp8", "quantize_fp8_transposed",
             "quantize_fp8_dual", "scale_quantize_fp8",
             "scale_quantize_fp8_dual", "amax_rows", "quantize_rows",
             "quantize_rows_transposed", "amax_quantize_rows",
             "scale_quantize_rows_transposed", "state_quantize_fp8",
             "state_quantize_fp8_dual", "state_quantize_fp8_transposed"}
    variants = (("bf16", []), ("fp8-tensorwise", []), ("fp8-delayed", []),
                ("fp8-delayed", ["--fp8-weight-scaling=current"]),
                ("fp8-rowwise", []))
    for precision, extra in variants:
        policy = precision + "".join(" " + flag for flag in extra)
        # Delayed scaling's casts of the weights read the scale train_step
        # updates from the amax history: they stay; the bf16 copies go.
        moved = {"convert"} if policy == "fp8-delayed" else casts
        logs, counts = {}, {}
        for cache in ("true", "false"):
            art = "%s/%s%s-%s.so" % (work, precision,
                                     "-current-weights" if extra else "", cache)
            flags = [args.model, "--precision=" + precision, *extra,
                     "--cache-weight-casts=" + cache]
            subprocess.run([args.gptc, *flags, "-o", art], check=True)
            rt = subprocess.run([args.gptc, *flags, "--emit=rt", "-o", "-"],
                                check=True, capture_output=True,
                                text=True).stdout
            kernels, params = functions(rt)
            reading = [k for k, ins in kernels["train_step"] if k in moved and
                       any(v.strip() in params["train_step"]
                           for v in ins.split(","))]
            counts[cache] = (len(kernels["train_step"]), len(reading),
                             len(kernels.get("cast_weights", [])),
                             "rt.arena @weight_cache weight_cache" in rt)
            log = art + ".jsonl"
            subprocess.run([args.gptrun, art, "--data", work + "/data/train_*.bin",
                            "--total-batch-tokens", "512", "--steps", "4",
                            "--lr", "1e-3",
                            *(["--fp8-stats-every", "2"] if precision != "bf16"
                              else []),
                            "--val-data", work + "/data/val_*.bin",
                            "--eval-every", "2", "--val-tokens", "512",
                            "--samples-every", "2", "--sample-tokens", "8",
                            "--log", log, "--quiet"], check=True,
                           stdout=subprocess.DEVNULL)
            with open(log) as f:
                logs[cache] = [{k: v for k, v in json.loads(line).items()
                                if k not in TIMING} for line in f]
        if logs["true"] != logs["false"]:
            failures.append("%s: the logs differ with and without the cache:"
                            " %s vs %s" % (policy, logs["true"], logs["false"]))
        if not any("val_loss" in r for r in logs["true"]):
            failures.append("%s: no validation loss logged" % policy)
        on, off = counts["true"], counts["false"]
        if not (on[0] < off[0] and on[1] == 0 and off[1] > 0 and on[2] > 0
                and on[3] and off[2] == 0 and not off[3]):
            failures.append(
                "%s: the pass did not act as expected: train_step kernels %d "
                "(%d without), casts of parameters in train_step %d (%d "
                "without), cast_weights kernels %d, weight_cache arena %s"
                % (policy, on[0], off[0], on[1], off[1], on[2], on[3]))
        summary.append("%s: train_step %d -> %d kernels, cast_weights %d, "
                       "final loss %.7f" % (policy, off[0], on[0], on[2],
                                             logs["true"][-1]["loss"]))
    if failures:
        print("FAILED: " + "; ".join(failures))
        return 1
    print("PASSED: the same logs with the weights cast once per step; "
          + "; ".join(summary))
    return 0


if __name__ == "__main__":
    sys.exit(main())
