#!/usr/bin/env python3
"""gptrun --profile-step N times every runtime call of step N: the tiny
GPT trained 3 steps of two micro-steps, step 2 profiled, under every
precision (their fused kernels differ: a kernel made of a base kernel
and its epilogue must count once).
The table is printed (even with --quiet) and step 2's log line carries
"profiled" and "profile"; each gptrt_* function's call count there is
what the compiled module makes it (gptc --emit=rt: its kernels in
cast_weights once -- step 1's update outdated the weights' casts --, in
train_step twice -- two micro-steps -- and in optimizer_step once), the
times are positive and add up to no more than the step; the losses equal
an unprofiled run's, every f32 digit; other steps carry no profile; an
out-of-range step is refused with one line naming it."""
import collections
import json
import re
import subprocess
import sys

import e2e_setup
from rt_kernels import kernel_forms, label


def kernels_of(rt, function):
    """Calls of `function` by the runtime's name (a producer with its FP8
    output epilogue counts as gptrt_<kernel>+<work>, one call)."""
    body = rt.split("func.func @%s(" % function)[1].split("\n  func.func @")[0]
    return collections.Counter(label(k, work) for k, work in kernel_forms(body))


def main():
    args = e2e_setup.parse_and_prepare(__doc__.splitlines()[0])
    work = args.work
    failures, summary = [], []
    for precision in ("fp8-delayed", "fp32", "bf16", "fp8-tensorwise", "fp8-rowwise"):
        art = "%s/tiny-%s.so" % (work, precision)
        flags = [args.model, "--precision=" + precision]
        subprocess.run([args.gptc, *flags, "-o", art], check=True)
        rt = subprocess.run([args.gptc, *flags, "--emit=rt", "-o", "-"],
                            check=True, capture_output=True, text=True).stdout
        # Step 2 runs cast_weights once (step 1's update outdated the
        # cache), train_step twice, optimizer_step once.
        want = collections.Counter()
        for function, times in (("cast_weights", 1), ("train_step", 2),
                                ("optimizer_step", 1)):
            if "func.func @%s(" % function in rt:
                for kernel, n in kernels_of(rt, function).items():
                    want[kernel] += times * n

        def run(name, *extra):
            log = "%s/%s-%s.jsonl" % (work, precision, name)
            done = subprocess.run(
                [args.gptrun, art, "--data", work + "/data/train_*.bin",
                 "--total-batch-tokens", "512", "--steps", "3", "--lr", "1e-3",
                 "--quiet", "--log", log, *extra],
                capture_output=True, text=True)
            return done, log

        profiled, log = run("profiled", "--profile-step", "2")
        plain, plain_log = run("plain")
        if profiled.returncode != 0 or plain.returncode != 0:
            failures.append("%s: gptrun failed: %s%s" % (precision, profiled.stderr,
                                                        plain.stderr))
            continue
        rows = [json.loads(line) for line in open(log)]
        base = [json.loads(line) for line in open(plain_log)]
        if [r["loss"] for r in rows] != [r["loss"] for r in base]:
            failures.append("%s: losses differ with the profile: %s vs %s" % (
                precision, [r["loss"] for r in rows], [r["loss"] for r in base]))
        if [("profile" in r) for r in rows] != [False, True, False] \
                or not rows[1].get("profiled"):
            failures.append("%s: profile in steps %s, expected step 2 (index 1) only"
                            % (precision, [i for i, r in enumerate(rows) if "profile" in r]))
            continue
        got = {p["function"]: p["calls"] for p in rows[1]["profile"]}
        if got != dict(want):
            diff = {f: (got.get(f, 0), want.get(f, 0))
                    for f in set(got) | set(want) if got.get(f, 0) != want.get(f, 0)}
            failures.append("%s: calls per function unlike the module's kernels "
                            "(profiled, expected): %s" % (precision, diff))
        total = sum(p["ms"] for p in rows[1]["profile"])
        if any(p["ms"] < 0 for p in rows[1]["profile"]) \
                or not 0 < total <= rows[1]["step_ms"]:
            failures.append("%s: timed %.3f ms of a %.3f ms step"
                            % (precision, total, rows[1]["step_ms"]))
        table = re.search(r"profile of step 2: (\d+) runtime calls, ([\d.]+) ms timed",
                          profiled.stdout)
        if not table or int(table.group(1)) != sum(want.values()):
            failures.append("%s: no table of step 2 with %d calls printed: %r"
                            % (precision, sum(want.values()), profiled.stdout[:300]))
        summary.append("%s %d calls of %d functions, %.1f of %.1f ms" % (
            precision, sum(want.values()), len(want), total, rows[1]["step_ms"]))
    bad = subprocess.run(
        [args.gptrun, work + "/tiny-fp8-delayed.so", "--data",
         work + "/data/train_*.bin", "--steps", "3", "--profile-step", "4"],
        capture_output=True, text=True)
    if bad.returncode == 0 or "--profile-step 4 must be between 1 and --steps 3" not in bad.stderr:
        failures.append("--profile-step 4 of 3 steps: rc %d, %r" % (bad.returncode, bad.stderr))
    if failures:
        print("FAILED: " + "; ".join(failures))
        return 1
    print("PASSED: step 2 timed, the same losses as without: " + "; ".join(summary))
    return 0

if __name__ == "__main__":
    sys.exit(main())
