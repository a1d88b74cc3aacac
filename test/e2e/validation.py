#!/usr/bin/env python3
"""Validation loss is over a fixed number of tokens and does not depend on
the compiled micro-batch: the same initial parameters compiled with
micro-batch 2 and 3 (3 leaves a padded, partly ignored last micro-batch)
give the same val loss, to float rounding of the per-batch means. Also
checks that --samples-every prints and logs samples."""
import json
import struct
import subprocess
import sys

import choicefile
import e2e_setup


def main():
    args = e2e_setup.parse_and_prepare(__doc__.splitlines()[0])
    work = args.work

    def val_loss(precision, micro_batch, val_tokens):
        art = "%s/%s-b%d.so" % (work, precision, micro_batch)
        subprocess.run([args.gptc, args.model, "--precision", precision,
                        "--micro-batch", str(micro_batch), "-o", art], check=True)
        log = art + ".jsonl"
        # lr 0: the optimizer step leaves the initial parameters as they are.
        subprocess.run([args.gptrun, art, "--data", work + "/data/train_*.bin",
                        "--val-data", work + "/data/val_*.bin", "--steps", "1",
                        "--lr", "0", "--val-tokens", str(val_tokens), "--quiet",
                        "--log", log], check=True, stdout=subprocess.DEVNULL)
        with open(log) as f:
            return json.loads(f.readline())["val_loss"]

    failures, measured = [], []
    # Relative bounds: fp32 differs only by the order of the per-batch means
    # (float sums of ~1000 terms); bf16 also by OpenBLAS' GEMM blocking,
    # which changes with M = B*T, before the bf16 rounding of activations.
    for precision, tolerance in (("fp32", 1e-6), ("bf16", 1e-5)):
        for tokens in (1000, 640):
            a, b = val_loss(precision, 2, tokens), val_loss(precision, 3, tokens)
            measured.append("%s/%d: %.7f vs %.7f" % (precision, tokens, a, b))
            if abs(a - b) > tolerance * abs(a):
                failures.append("%s, %d tokens: micro-batch 2 gives %.7f, 3 gives "
                                "%.7f" % (precision, tokens, a, b))
    # A different count is a different mean (the check above can fail).
    if val_loss("fp32", 2, 1000) == val_loss("fp32", 2, 128):
        failures.append("--val-tokens 1000 and 128 gave the same loss")

    # A multiple-choice completion that spans a whole validation row scores
    # the loss eval_step gives that row: the compiled logits entry plus the
    # host's log-softmax agree with the compiled cross-entropy.
    art, ckpt = work + "/fp32-b2.so", work + "/ckpt"
    subprocess.run([args.gptrun, art, "--data", work + "/data/train_*.bin",
                    "--steps", "1", "--lr", "0", "--quiet", "--ckpt-dir", ckpt],
                   check=True, stdout=subprocess.DEVNULL)
    with open(work + "/data/val_000000.bin", "rb") as f:
        f.seek(1024)
        row = list(struct.unpack("<64H", f.read(128)))
    choices = work + "/row.bin"
    choicefile.write(choices, [(0, row[:1], [row[1:], row[1:9][::-1]])])
    run = subprocess.run([args.gptrun, "eval", art, ckpt, "--val-data",
                          work + "/data/val_*.bin", "--val-tokens", "63",
                          "--choices", choices, "--per-example"],
                         check=True, capture_output=True, text=True)
    lines = run.stdout.splitlines()
    row_loss = float(lines[0].split("val loss ")[1])
    choice_loss = float(lines[1].split("mean losses ")[1].split()[0])
    measured.append("row loss %.6f, as a choice %.6f" % (row_loss, choice_loss))
    if abs(row_loss - choice_loss) > 1e-5 * row_loss:
        failures.append("the whole-row completion scores %.6f, eval_step %.6f"
                        % (choice_loss, row_loss))

    # Too few validation tokens: one clear line.
    run = subprocess.run([args.gptrun, work + "/fp32-b2.so", "--data",
                          work + "/data/train_*.bin", "--val-data",
                          work + "/data/val_*.bin", "--val-tokens", "100000000"],
                         capture_output=True, text=True)
    if run.returncode == 0 or "lower --val-tokens" not in run.stderr:
        failures.append("an oversized --val-tokens was not refused: " + run.stderr)

    # --samples-every: printed and logged, every N steps but not the last.
    log = work + "/samples.jsonl"
    run = subprocess.run([args.gptrun, work + "/fp32-b2.so", "--data",
                          work + "/data/train_*.bin", "--steps", "4",
                          "--samples-every", "2", "--sample-tokens", "5",
                          "--prompt", "The \"quoted\"", "--log", log],
                         check=True, capture_output=True, encoding="utf-8")
    with open(log) as f:
        records = [json.loads(line) for line in f]
    sampled = [r["step"] for r in records if "sample" in r]
    if sampled != [1] or not records[1]["sample"].startswith("The \"quoted\""):
        failures.append("expected one logged sample at step index 1 starting "
                        "with the prompt, got %r" % records)
    if run.stdout.count("sample at step 2:") != 1:
        failures.append("the sample was not printed: " + run.stdout)

    if failures:
        print("FAILED: " + "; ".join(failures))
        return 1
    print("PASSED: val loss independent of micro-batch (fp32 within 1e-6, bf16 "
          "within 1e-5 relative: %s); --samples-every prints and logs"
          % "; ".join(measured))
    return 0


if __name__ == "__main__":
    sys.exit(main())
