#!/usr/bin/python3
"""PyTorch CPU side of tools/bench-cpu-step.sh: times training steps of gpt2-tiny.

The model, optimizer groups and step are the parity test's
(test/e2e/pytorch_parity.py), so the two sides of the benchmark run the same
network; only clipping is torch's own clip_grad_norm_, since this side stands
for what plain PyTorch costs. Prints one line: `median_step_ms X threads N`.
"""
import argparse
import os
import statistics
import sys
import time

import numpy as np
import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "test", "e2e"))
from pytorch_parity import GPT2, MICRO_BATCH, TINY, adamw_for, train_step  # noqa: E402


def init_like_gptc(model):
    # Timing does not depend on the values, but denormals or NaNs would; use
    # GPT-2's scales (the .mlir's init attributes) rather than zeros.
    with torch.no_grad():
        for name, p in model.named_parameters():
            if p.dim() >= 2:
                std = 0.02
                if name.endswith("proj.weight"):
                    std = 0.02 / (2 * TINY["depth"]) ** 0.5
                p.normal_(0.0, std)
            elif name.endswith("ln_1.weight") or name.endswith("ln_2.weight") or name == "ln_f.weight":
                p.fill_(1.0)
            else:
                p.zero_()


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--first", type=int, default=5, help="first timed step (warm-up before)")
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--lr", type=float, default=1e-3)
    args = ap.parse_args()
    if not 0 <= args.first < args.steps:
        ap.error("--first must lie in [0, --steps)")

    torch.set_default_dtype(torch.float32)
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    model = GPT2(**TINY)
    init_like_gptc(model)
    opt = adamw_for(model, args.lr)

    b, t = MICRO_BATCH, TINY["seq"]
    rng = np.random.default_rng(0)
    tokens = torch.from_numpy(rng.integers(0, TINY["vocab"], size=(args.steps, b * t + 1)))
    times = []
    for step in range(args.steps):
        x, y = tokens[step, :-1].view(b, t), tokens[step, 1:].view(b, t)
        start = time.perf_counter()
        loss = train_step(model, opt, x, y, clip=torch.nn.utils.clip_grad_norm_)
        loss.item()  # the step is synchronous on CPU; this only keeps it honest
        times.append((time.perf_counter() - start) * 1e3)
    print("median_step_ms %.3f threads %d" % (statistics.median(times[args.first:]), args.threads))
    return 0


if __name__ == "__main__":
    sys.exit(main())
