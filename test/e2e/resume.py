#!/usr/bin/env python3
"""Checkpoints resume exactly: 40 steps straight equal 20 steps, a
checkpoint, and 20 more steps resumed from it -- the same losses (every bit
of the f32 values printed) and the same final parameters, byte for byte.
Resuming with another artifact or from a damaged checkpoint is refused with
the reason."""
import filecmp
import json
import os
import subprocess
import sys

import e2e_setup


def main():
    args = e2e_setup.parse_and_prepare(__doc__.splitlines()[0])
    work = args.work
    art = work + "/tiny.so"
    subprocess.run([args.gptc, args.model, "-o", art], check=True)

    def gptrun(*extra, check=True):
        cmd = [args.gptrun, art, "--data", work + "/data/train_*.bin",
               "--steps", "40", "--lr", "1e-3", "--warmup", "5", "--seed", "11",
               "--quiet", *extra]
        return subprocess.run(cmd, check=check, capture_output=True, text=True)

    gptrun("--log", work + "/straight.jsonl", "--dump", work + "/straight")
    gptrun("--ckpt-dir", work + "/ckpt", "--ckpt-every", "20")
    # Continue the logged run from its step-20 checkpoint, as after a crash.
    with open(work + "/straight.jsonl") as f:
        first_half = f.readlines()[:20]
    with open(work + "/resumed.jsonl", "w") as f:
        f.writelines(first_half)
    run = gptrun("--resume", work + "/ckpt/step_00000020",
                 "--log", work + "/resumed.jsonl", "--dump", work + "/resumed")
    assert "resumed from" in run.stdout and "at step 20" in run.stdout, run.stdout

    def losses(path):
        with open(path) as f:
            return [json.loads(line)["loss"] for line in f]

    failures = []
    straight, resumed = losses(work + "/straight.jsonl"), losses(work + "/resumed.jsonl")
    if len(straight) != 40 or straight != resumed:
        failures.append("losses differ: %s vs %s" % (straight[18:24], resumed[18:24]))
    final_a, final_b = work + "/straight/final", work + "/resumed/final"
    files = sorted(os.listdir(final_a))
    if len(files) < 50:
        failures.append("expected the 52 parameter files, found %d" % len(files))
    _, mismatch, errors = filecmp.cmpfiles(final_a, final_b, files, shallow=False)
    if mismatch or errors:
        failures.append("final parameters differ: %s" % (mismatch + errors)[:5])

    # The latest checkpoint is found through --ckpt-dir alone.
    run = gptrun("--resume", "--ckpt-dir", work + "/ckpt", "--steps", "41")
    if "at step 40" not in run.stdout:
        failures.append("--resume without a path did not take the latest: " + run.stdout)

    # eval and sample work from a checkpoint.
    run = subprocess.run([args.gptrun, "eval", art, work + "/ckpt",
                          "--val-data", work + "/data/val_*.bin", "--val-tokens", "1024"],
                         check=True, capture_output=True, text=True)
    value = float(run.stdout.split("val loss", 1)[1])
    if not 0.0 < value < straight[0]:
        failures.append("gptrun eval gave %r, expected below the first loss" % value)
    run = subprocess.run([args.gptrun, "sample", art, work + "/ckpt", "--prompt",
                          "The ", "--tokens", "8"], check=True, capture_output=True,
                         encoding="utf-8")
    if not run.stdout.startswith("The "):
        failures.append("gptrun sample did not continue the prompt: %r" % run.stdout)

    # Another artifact (another micro-batch) is refused.
    other = work + "/other.so"
    subprocess.run([args.gptc, args.model, "--micro-batch", "2", "-o", other], check=True)
    run = subprocess.run([args.gptrun, other, "--data", work + "/data/train_*.bin",
                          "--steps", "40", "--quiet", "--resume",
                          work + "/ckpt/step_00000020"], capture_output=True, text=True)
    if run.returncode == 0 or "different manifest" not in run.stderr:
        failures.append("a checkpoint of another artifact was not refused: " + run.stderr)

    # A damaged arena file is refused by its checksum.
    with open(work + "/ckpt/step_00000020/params.bin", "r+b") as f:
        f.seek(1000)
        f.write(b"\x7f")
    run = gptrun("--resume", work + "/ckpt/step_00000020", check=False)
    if run.returncode == 0 or "does not match its checksum" not in run.stderr:
        failures.append("a corrupt checkpoint was not refused: " + run.stderr)

    if failures:
        print("FAILED: " + "; ".join(failures))
        return 1
    print("PASSED: 40 straight steps == 20 + resume + 20 (losses and %d "
          "parameter files bit-identical); bad resumes refused" % len(files))
    return 0


if __name__ == "__main__":
    sys.exit(main())
