#!/usr/bin/env python3
"""rt-batch-adamw updates parameters that lie one after another with one
adamw_multi kernel (weight decay per range of elements) instead of one
adamw kernel each, never changing a bit: the tiny GPT compiled with and
without it (--batch-adamw=false) and trained 6 steps, two micro-steps
each, logs the same losses and gradient norms (every f32 digit) and
writes checkpoints whose arenas are equal byte for byte (params.bin and
optimizer.bin: parameters and both AdamW moments). Also checks that the pass acted (gptc --emit=rt,
optimizer_step): one adamw per parameter without it, none with it, and
adamw_multi kernels whose weight-decay tables cover exactly the 2-D
parameters' elements."""
import filecmp
import json
import os
import re
import subprocess
import sys

import e2e_setup


def optimizer_step(rt):
    body = rt[rt.index("func.func @optimizer_step"):]
    return body[:body.find("func.func @", 1)]


def main():
    args = e2e_setup.parse_and_prepare(__doc__.splitlines()[0])
    work = args.work
    failures = []
    logs, steps = {}, {}
    for batch in ("true", "false"):
        art = "%s/%s.so" % (work, batch)
        flags = [args.model, "--precision=bf16", "--batch-adamw=" + batch]
        subprocess.run([args.gptc, *flags, "-o", art], check=True)
        steps[batch] = optimizer_step(subprocess.run(
            [args.gptc, *flags, "--emit=rt", "-o", "-"], check=True,
            capture_output=True, text=True).stdout)
        log = art + ".jsonl"
        subprocess.run([args.gptrun, art, "--data", work + "/data/train_*.bin",
                        "--total-batch-tokens", "512", "--steps", "6",
                        "--lr", "1e-3", "--log", log, "--quiet",
                        "--ckpt-dir", "%s/ckpt-%s" % (work, batch)],
                       check=True, stdout=subprocess.DEVNULL)
        with open(log) as f:
            logs[batch] = [json.loads(line) for line in f]

    # gptrt_adamw's constants: n, beta1, beta2, eps, weight_decay.
    plain = re.findall(r'rt\.kernel "adamw" .* consts \[(\d+), [^,]+, [^,]+, '
                       r'[^,]+, ([^,\]]+)\]', steps["false"])
    multi = re.findall(r'rt\.kernel "adamw_multi" .* consts \[(\d+), [^,]+, '
                       r'[^,]+, [^,]+, [^,]+, (\d+), array<i64(?:: ([\d, ]+))?>\]',
                       steps["true"])
    decayed = sum(int(n) for n, wd in plain if float(wd) != 0)
    in_tables = 0
    for n, count, table in multi:
        bounds = [int(b) for b in table.split(",")] if table else []
        if len(bounds) != 2 * int(count):
            failures.append("adamw_multi table %s has not %s ranges" % (table, count))
        in_tables += sum(bounds[1::2]) - sum(bounds[0::2])
    if (not plain or 'rt.kernel "adamw_multi"' in steps["false"]
            or 'rt.kernel "adamw" ' in steps["true"] or not multi
            or sum(int(n) for n, _, _ in multi) != sum(int(n) for n, _ in plain)
            or in_tables != decayed or decayed == 0):
        failures.append("the pass did not act as expected: %d adamw kernels "
                        "without it, %d adamw_multi with it; %d decayed "
                        "elements, %d in the tables" % (
                            len(plain), len(multi), decayed, in_tables))

    keys = ("loss", "grad_norm")
    on = [[r.get(k) for k in keys] for r in logs["true"]]
    off = [[r.get(k) for k in keys] for r in logs["false"]]
    if not on or on != off:
        failures.append("losses or gradient norms differ: %s vs %s" % (on, off))

    # The checkpoints' arenas: every file equal, byte for byte (the index,
    # checkpoint.pb, records the artifact's manifest hash, which differs).
    def files(root):
        return sorted(os.path.relpath(os.path.join(d, f), root)
                      for d, _, names in os.walk(root) for f in names
                      if f.endswith(".bin"))
    a, b = work + "/ckpt-true", work + "/ckpt-false"
    names = files(a)
    if (names != files(b) or not any(n.endswith("/params.bin") for n in names)
            or not any(n.endswith("/optimizer.bin") for n in names)):
        failures.append("checkpoint files differ: %s vs %s" % (names, files(b)))
    else:
        _, mismatch, errors = filecmp.cmpfiles(a, b, names, shallow=False)
        if mismatch or errors:
            failures.append("checkpoint files not equal: %s %s" % (mismatch, errors))

    print("optimizer_step: %d adamw -> %d adamw_multi (%d decayed elements); "
          "%d steps, final loss %.7f with and without; %d checkpoint arena "
          "files equal" % (len(plain), len(multi), decayed, len(on),
                     logs["true"][-1]["loss"] if logs["true"] else float("nan"),
                     len(names)))
    for f in failures:
        print("FAIL:", f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
