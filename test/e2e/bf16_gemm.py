#!/usr/bin/env python3
"""gpt-bf16-gemm, gpt-bf16-kernels, rt-fuse-gemm-epilogue,
rt-fuse-add-layernorm (forward and backward), rt-fuse-classifier and
rt-fuse-qkv-attention change where bf16 values are widened and narrowed and
which kernel computes the GELU, the bias gradient, the residual add (and
its gradient), the loss and its gradient or the q, k, v split, never the
numbers on the CPU: the tiny GPT compiled with all
of them, with gpt-bf16-gemm alone, without the four kernel fusions and with
neither storage
pass trains to bit-identical losses and gradient norms (every f32 digit in
the log), in bf16 and in fp8-tensorwise, fp8-rowwise and fp8-delayed with
lm_head kept bf16 (--fp8-exclude=lm_head). rt-fuse-grad-accumulation, which does change
the numbers (the weight gradients are no longer rounded to bf16), is off in
every variant (test/e2e/grad_accumulation.py covers it). Also checks that
the rewrites happened (gptc
--emit=rt, train_step): every bf16 GEMM is a bf16 gemm call with its bias in
the epilogue (no bias_add left), or one with the GELU (or its gradient, or
the bias gradient) in it, FP8 GEMMs (tensorwise and rowwise)
take their bias, each storage pass removes convert kernels, the fused
classifier replaces the loss's two kernels and attention reads q, k, v
packed (no copy_blocks left).
Prints the CPU step times side by side (not a timed test)."""
import json
import os
import re
import statistics
import subprocess
import sys

import e2e_setup
from rt_kernels import gemm_calls

# (precision flags, GEMMs expected to read bf16: the tiny GPT has 4 blocks
# of 4 linear layers plus lm_head, each with a forward, a grad_input and a
# grad_weight GEMM; attention is its own kernel, not a GEMM here; GEMM
# epilogues: each block's mlp.fc forward and mlp.proj grad_input GEMM (the
# GELU) and the grad_weight GEMM of its 4 linear layers with a bias (the
# bias gradient) when they are bf16; FP8 GEMMs with the bias in their
# epilogue: the forward GEMM of each block's 4 linear layers, under
# tensorwise and under rowwise scaling)
CASES = (
    (["--precision=bf16"], 3 * (4 * 4 + 1), 2 * 4 + 4 * 4, 0),
    (["--precision=fp8-tensorwise", "--fp8-exclude=lm_head"], 3, 0, 4 * 4),
    (["--precision=fp8-rowwise", "--fp8-exclude=lm_head"], 3, 0, 4 * 4),
    # (delayed scaling: the residual gradients' casts are the epilogues of
    # adds, which rt-fuse-add-layernorm folds into the layernorm backward)
    (["--precision=fp8-delayed", "--fp8-exclude=lm_head"], 3, 0, 4 * 4),
)
# The bf16 GEMM forms with a fused epilogue (rt_kernels.gemm_form).
FUSED = ("bf16+bias+gelu", "bf16+dgelu", "bf16+dbias")


def main():
    args = e2e_setup.parse_and_prepare(__doc__.splitlines()[0])
    work = args.work
    failures, summary = [], []
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1")
    for flags, gemms, epilogues, fp8_biases in CASES:
        name = flags[0].split("=")[1]
        runs, counts, ms = {}, {}, {}
        # name -> (--bf16-gemm, --bf16-kernels, --gemm-epilogues,
        # --fuse-add-layernorm and --fuse-classifier)
        variants = {"both": ("true", "true", "true"),
                    "gemm": ("true", "false", "true"),
                    "nofuse": ("true", "true", "false"),
                    "none": ("false", "false", "true")}
        for variant, (gemm, kernels, fusions) in variants.items():
            art = "%s/%s-%s.so" % (work, name, variant)
            compile_flags = [args.model, *flags, "--bf16-gemm=" + gemm,
                             "--bf16-kernels=" + kernels,
                             "--gemm-epilogues=" + fusions,
                             "--fuse-add-layernorm=" + fusions,
                             "--fuse-classifier=" + fusions,
                             "--fuse-qkv-attention=" + fusions,
                             "--fuse-grad-accumulation=false"]
            subprocess.run([args.gptc, *compile_flags, "-o", art], check=True)
            rt = subprocess.run([args.gptc, *compile_flags, "--emit=rt", "-o", "-"],
                                check=True, capture_output=True, text=True).stdout
            train = rt[rt.index("func.func @train_step"):]
            train = train[:train.find("func.func @", 1)]
            forms = [form for form, _ in gemm_calls(train)]
            counts[variant] = {
                "bf16 GEMMs": sum(1 for f in forms if f.startswith("bf16")),
                "GEMM epilogues": sum(1 for f in forms if f in FUSED),
                "convert": train.count('rt.kernel "convert"'),
                "bias_add": train.count('rt.kernel "bias_add"'),
                "classifier": train.count('rt.kernel "cross_entropy_fwd_bwd"'),
                "fp8 bias": sum(1 for f in forms
                                if f in ("fp8+bias", "fp8_rowwise+bias")),
                "copies": train.count('rt.kernel "copy_blocks"'),
                "packed attention": len(re.findall(
                    r'rt\.kernel "attention_(?:fwd|bwd)_packed(?:_amax|_cast)?"',
                    train)),
                "residual adds": len(re.findall(
                    r'rt\.kernel "add_layernorm_fwd(?:_amax|_cast|_cast_dual)?"',
                    train)),
                "residual gradients": len(re.findall(
                    r'rt\.kernel "layernorm_bwd_add(?:_amax|_cast)?"', train))}
            log = art + ".jsonl"
            subprocess.run([args.gptrun, art, "--data", work + "/data/train_*.bin",
                            "--steps", "8", "--lr", "1e-3", "--log", log, "--quiet"],
                           check=True, stdout=subprocess.DEVNULL, env=env)
            with open(log) as f:
                runs[variant] = [json.loads(line) for line in f]
            ms[variant] = statistics.median(r["step_ms"] for r in runs[variant][1:])
        for variant in ("both", "gemm", "nofuse"):
            for key in ("loss", "grad_norm"):
                got = [r[key] for r in runs[variant]]
                want = [r[key] for r in runs["none"]]
                if got != want:
                    failures.append("%s: %s differs (%s vs neither pass): %s vs %s"
                                    % (name, key, variant, got, want))
        for variant, expected, fused in (
                # gpt-bf16-gemm alone leaves the GELU reading an f32
                # widening of the GEMM's bf16 result: nothing to fold.
                ("both", gemms, epilogues), ("gemm", gemms, 0),
                ("nofuse", gemms, 0), ("none", 0, 0)):
            if counts[variant]["bf16 GEMMs"] != expected:
                failures.append("%s: %d bf16 GEMM kernels (%s), expected %d" % (
                    name, counts[variant]["bf16 GEMMs"], variant, expected))
            if counts[variant]["GEMM epilogues"] != fused:
                failures.append("%s: %d GEMMs with a GELU or bias-gradient "
                                "epilogue (%s), expected %d" % (
                                    name, counts[variant]["GEMM epilogues"],
                                    variant, fused))
        # Without gpt-bf16-kernels the bias add reads an f32 widening of the
        # FP8 GEMM's bf16 result, and the backward widens the bf16 logits
        # again (another buffer than the forward read): nothing to fuse.
        for variant, (_, kernels, fusions) in variants.items():
            want = fp8_biases if kernels == fusions == "true" else 0
            if counts[variant]["fp8 bias"] != want:
                failures.append("%s: %d FP8 GEMMs with the bias in their "
                                "epilogue (%s), expected %d" % (
                                    name, counts[variant]["fp8 bias"], variant, want))
            want = 1 if kernels == fusions == "true" else 0
            # The 4 blocks' attentions, forward and backward, on q, k, v
            # packed: no split or concat copies left (without
            # gpt-bf16-kernels the attention reads f32 widenings instead).
            packed = counts[variant]["packed attention"]
            expected = (8 * want, 24 * (1 - want))
            if (packed, counts[variant]["copies"]) != expected:
                failures.append("%s: %d packed attention kernels and %d copies "
                                "(%s), expected %d and %d" % (
                                    name, packed, counts[variant]["copies"],
                                    variant, *expected))
            # The 4 blocks' 2 residual adds each fused into the layernorm
            # after them, with its FP8 epilogue if any, and their 2
            # layernorm backwards each adding dx into the residual gradient
            # (without gpt-bf16-kernels, converts stand between).
            for key in ("residual adds", "residual gradients"):
                if counts[variant][key] != 8 * want:
                    failures.append("%s: %d %s fused with their layernorm "
                                    "(%s), expected %d" % (
                                        name, counts[variant][key], key,
                                        variant, 8 * want))
            if counts[variant]["classifier"] != want:
                failures.append("%s: %d fused classifier kernels (%s), expected %d"
                                % (name, counts[variant]["classifier"], variant, want))
        if name == "bf16" and counts["gemm"]["bias_add"] != 0:
            failures.append("bf16: %d bias_add kernels left: every bias should "
                            "be in its bf16 GEMM's epilogue" % counts["gemm"]["bias_add"])
        converts = [counts[v]["convert"] for v in ("none", "gemm", "both")]
        if not converts[0] > converts[1] > converts[2]:
            failures.append("%s: convert kernels %s (neither, gemm, both): "
                            "expected each pass to remove some" % (name, converts))
        summary.append("%s: %d bf16 GEMMs (%d with a GELU or bias-gradient "
                       "epilogue), %d FP8 GEMMs with their bias, convert "
                       "kernels %d -> %d (bf16-gemm) -> %d (bf16-kernels), "
                       "final loss %.7f in all four, CPU median step %.1f / "
                       "%.1f / %.1f / %.1f ms (neither, gemm, both, both "
                       "without the kernel fusions)" % (
                           name, counts["both"]["bf16 GEMMs"],
                           counts["both"]["GEMM epilogues"],
                           counts["both"]["fp8 bias"], *converts,
                           runs["both"][-1]["loss"], ms["none"], ms["gemm"],
                           ms["both"], ms["nofuse"]))
    if failures:
        print("FAILED: " + "; ".join(failures))
        return 1
    print("PASSED: " + "; ".join(summary))
    return 0


if __name__ == "__main__":
    sys.exit(main())
