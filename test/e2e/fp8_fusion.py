#!/usr/bin/env python3
"""fp8-fuse-amax and fp8-fuse-cast change where amaxes and FP8 casts are
computed, never their values: the tiny GPT compiled with and without
--fp8-fusion trains to bit-identical losses (every f32 digit in the log)
and identical per-cast FP8 statistics, for current (tensorwise) and
delayed scaling. Also checks that fusion really happened: the fused
artifact runs fewer separate amax kernels (gptc --emit=rt)."""
import json
import re
import subprocess
import sys

import e2e_setup


def main():
    args = e2e_setup.parse_and_prepare(__doc__.splitlines()[0])
    work = args.work
    failures, summary = [], []
    for policy in ("fp8-tensorwise", "fp8-delayed"):
        runs, kernels = {}, {}
        for fusion in ("true", "false"):
            art = "%s/%s-%s.so" % (work, policy, fusion)
            flags = [args.model, "--precision=" + policy, "--fp8-fusion=" + fusion]
            subprocess.run([args.gptc, *flags, "-o", art], check=True)
            rt = subprocess.run([args.gptc, *flags, "--emit=rt", "-o", "-"],
                                check=True, capture_output=True, text=True).stdout
            kernels[fusion] = (rt.count('rt.kernel "amax"'),
                               rt.count('rt.kernel "quantize_fp8"'),
                               len(re.findall(r'rt\.kernel "(?!scale_from_amax)\w+_(?:amax|cast)"', rt)))
            log = art + ".jsonl"
            subprocess.run([args.gptrun, art, "--data", work + "/data/train_*.bin",
                            "--steps", "8", "--lr", "1e-3", "--fp8-stats-every", "4",
                            "--log", log, "--quiet"], check=True,
                           stdout=subprocess.DEVNULL)
            with open(log) as f:
                runs[fusion] = [json.loads(line) for line in f]
        fused, plain = runs["true"], runs["false"]
        if [r["loss"] for r in fused] != [r["loss"] for r in plain]:
            failures.append("%s: losses differ with fusion: %s vs %s" % (
                policy, [r["loss"] for r in fused], [r["loss"] for r in plain]))
        if [r.get("fp8") for r in fused] != [r.get("fp8") for r in plain]:
            failures.append("%s: FP8 statistics differ with fusion" % policy)
        if not kernels["true"][0] < kernels["false"][0] or kernels["true"][2] == 0:
            failures.append("%s: no fusion happened (amax, quantize, fused "
                            "kernels with fusion %s, without %s)"
                            % (policy, kernels["true"], kernels["false"]))
        if policy == "fp8-delayed" and not kernels["true"][1] < kernels["false"][1]:
            failures.append("fp8-delayed: no cast was fused: %s vs %s"
                            % (kernels["true"], kernels["false"]))
        summary.append("%s: separate amax kernels %d -> %d, quantize %d -> %d, "
                       "fused kernels %d; final loss %.7f both" % (
                           policy, kernels["false"][0], kernels["true"][0],
                           kernels["false"][1], kernels["true"][1],
                           kernels["true"][2], fused[-1]["loss"]))
    if failures:
        print("FAILED: " + "; ".join(failures))
        return 1
    print("PASSED: bit-identical with and without fusion; " + "; ".join(summary))
    return 0


if __name__ == "__main__":
    sys.exit(main())
