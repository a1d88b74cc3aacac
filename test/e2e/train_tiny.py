#!/usr/bin/env python3
"""End to end on CPU: gptc compiles the tiny GPT, gptrun trains it on real
English text (the license texts Debian ships, one token per byte).

Default check: the training loss falls from about ln(vocab) to well below it
while the loss on held-out text (GPL-3, evaluated with eval_step) falls too.
With --compare A,B,... the same training runs in each precision (same seed,
same data) and every final loss must be within --tolerance (relative) of
the first one's: this is how the FP8 policies show they train as well as
bf16. The default run also scores a multiple-choice file (llm.c format)
made from the held-out text: the true continuation of a context against
three shuffles of its bytes; the trained model must pick the true one far
more often than chance (1/4)."""
import argparse
import json
import math
import os
import random
import struct
import subprocess
import sys

import choicefile


def make_choices(val_shard, path, examples=40, context=32, completion=16):
    """Examples from the held-out shard: a context, its true continuation
    and three shuffles of the same bytes (the label varies). A model that
    learned English spelling picks the true one; an untrained one scores
    chance. (Spans from elsewhere in the text are too hard to tell apart
    for this 4-layer byte-level model after 300 steps: ~0.35.)"""
    with open(val_shard, "rb") as f:
        count = struct.unpack("<256i", f.read(1024))[2]
        tokens = list(struct.unpack("<%dH" % count, f.read(2 * count)))
    rng = random.Random(5)
    span = context + completion
    out = []
    for i in range(examples):
        at = 1 + i * (len(tokens) - span - 1) // examples  # past end-of-text
        truth = tokens[at + context:at + span]
        wrong = []
        while len(wrong) < 3:
            shuffled = truth[:]
            rng.shuffle(shuffled)
            if shuffled != truth:
                wrong.append(shuffled)
        label = i % 4
        out.append((label, tokens[at:at + context],
                    wrong[:label] + [truth] + wrong[label:]))
    choicefile.write(path, out)


def train(args, variant, steps, extra=()):
    """Compiles and trains `variant` (a precision, then any further gptc
    flags after ':'s, e.g. fp8-delayed:--fp8-weight-scaling=current);
    returns the JSONL records."""
    precision, *flags = variant.split(":")
    work = os.path.join(args.work, "".join(
        c if c.isalnum() or c in "-_" else "_" for c in variant))
    os.makedirs(work, exist_ok=True)
    artifact = os.path.join(work, "tiny.so")
    subprocess.run([args.gptc, args.model, "--precision=" + precision, *flags,
                    "-o", artifact], check=True)
    log = os.path.join(work, "run.jsonl")
    if precision.startswith("fp8"):
        # Per-layer FP8 statistics for the plot (README's chart).
        extra = ("--fp8-stats-every", "10", *extra)
    run = subprocess.run([args.gptrun, artifact, "--device", "cpu",
                          "--data", args.work + "/data/train_*.bin",
                          "--val-data", args.work + "/data/val_*.bin",
                          "--steps", str(steps), "--lr", "1e-3", "--warmup", "10",
                          "--eval-every", "50", "--seed", "7", "--log", log,
                          "--sample-tokens", "16", "--prompt", "The ", *extra],
                         check=True, capture_output=True, encoding="utf-8")
    sys.stdout.write(run.stdout)
    # The compiled logits entry point talks back after training.
    assert "sample (16 tokens" in run.stdout, "gptrun printed no sample"
    assert run.stdout.split("top-k 40):\n", 1)[1].startswith("The "), \
        "the sample does not continue the prompt"
    with open(log) as f:
        records = [json.loads(line) for line in f]
    assert len(records) == steps, "expected %d JSONL records, got %d" % (
        steps, len(records))
    for key in ("step", "loss", "lr", "grad_norm", "tokens_per_s", "step_ms"):
        assert all(key in r for r in records), "a record lacks %r" % key
    return records


def final_loss(records):
    return sum(r["loss"] for r in records[-10:]) / 10


def check_falls(records, steps):
    failures = []
    first, last = records[0]["loss"], final_loss(records)
    val = [r["val_loss"] for r in records if "val_loss" in r]
    ln_vocab = math.log(50257)
    print("first loss %.3f (ln vocab %.3f), mean of last 10 %.3f, val %s"
          % (first, ln_vocab, last, " ".join("%.3f" % v for v in val)))
    if abs(first - ln_vocab) > 1.0:
        failures.append("first loss %.3f is not near ln(vocab) = %.3f"
                        % (first, ln_vocab))
    if last > 3.5:
        failures.append("training loss only fell to %.3f, expected < 3.5" % last)
    if len(val) != steps // 50:
        failures.append("expected %d evaluations, got %d" % (steps // 50, len(val)))
    elif not (val[-1] < val[0] - 0.2 and val[-1] < 3.5):
        # The first evaluation comes after 50 steps, when most of the drop
        # from ln(vocab) has happened; the held-out loss must keep falling.
        failures.append("validation loss did not fall below 3.5 and by 0.2 "
                        "from its first evaluation: %s" % val)
    return failures


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gptc", required=True)
    parser.add_argument("--gptrun", required=True)
    parser.add_argument("--model", required=True)
    parser.add_argument("--shards-script", required=True)
    parser.add_argument("--work", required=True)
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--compare",
                        help="precisions, e.g. bf16,fp8-tensorwise,fp8-delayed; "
                        "gptc flags may follow one after ':'s")
    parser.add_argument("--tolerance", type=float, default=0.03)
    args = parser.parse_args()
    os.makedirs(args.work, exist_ok=True)
    subprocess.run([sys.executable, args.shards_script, args.work + "/data",
                    "--licenses"], check=True)

    if args.compare:
        precisions = args.compare.split(",")
        finals = [final_loss(train(args, p, args.steps)) for p in precisions]
        failures = []
        for precision, loss in zip(precisions, finals):
            gap = abs(loss - finals[0]) / finals[0]
            print("final loss (mean of last 10 steps) %-15s %.4f, relative gap "
                  "to %s %.4f (tolerance %.4f)" % (precision, loss, precisions[0],
                                                   gap, args.tolerance))
            if gap > args.tolerance:
                failures.append("%s ends %.1f%% away from %s"
                                % (precision, 100 * gap, precisions[0]))
    else:
        choices = args.work + "/choices.bin"
        make_choices(args.work + "/data/val_000000.bin", choices)
        records = train(args, "bf16", args.steps, ("--choices", choices))
        failures = check_falls(records, args.steps)
        accuracy = [r["choices_acc_norm"] for r in records if "choices_acc_norm" in r]
        print("multiple choice acc_norm at each evaluation (chance 0.25): %s"
              % " ".join("%.3f" % a for a in accuracy))
        if len(accuracy) != args.steps // 50 or accuracy[-1] < 0.8:
            failures.append("multiple-choice accuracy %s, expected one per "
                            "evaluation and the last >= 0.8" % accuracy)
    if failures:
        print("FAILED: " + "; ".join(failures))
        return 1
    print("PASSED")
    return 0


if __name__ == "__main__":
    sys.exit(main())
