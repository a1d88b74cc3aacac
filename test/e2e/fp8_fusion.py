#!/usr/bin/env python3
"""fp8-fuse-amax, fp8-fuse-cast, fp8-transpose-casts, fp8-reuse-scales,
rt-fuse-dual-cast, rt-fuse-cast-scale, rt-batch-fp8-state-updates,
rt-fuse-delayed-dual-cast, rt-hoist-transposed-casts,
rt-fuse-producer-dual-cast, rt-fuse-producer-cast, rt-batch-fp8-state-scales and
rt-fuse-rowwise-cast change where amaxes, scales, FP8 casts and amax
histories are computed (and which copy of a forward activation the
backward keeps, or whether GELU's and the layernorms' outputs are stored
at all),
never their values: the tiny GPT compiled with all of them, without the
fusions (--fp8-fusion=false --fuse-dual-casts=false
--fuse-classifier=false --fuse-qkv-attention=false
--fuse-cast-scales=false --batch-fp8-state-updates=false
--batch-fp8-state-scales=false --hoist-transposed-casts=false, which also keep
the bias gradients, the amaxes of the logits' gradient and the attention
output, the scale kernels and the history updates apart)
and without the layout passes (--fp8-transpose-casts=false
--fp8-reuse-scales=false) trains to bit-identical losses (every f32 digit
in the log) and identical per-cast FP8 statistics, for current
(tensorwise) and delayed scaling; fp8-rowwise trains to the same losses
with and without transposed casts and its fused rowwise casts. Also checks that each pass really acted
(gptc --emit=rt): fewer separate amax kernels with fusion and again with
shared scales, and every FP8 GEMM reading K-contiguous operands ("TN",
the layout Hopper's FP8 tensor cores take) once casts are transposed."""
import json
import re
import subprocess
import sys

import e2e_setup
from rt_kernels import gemm_calls, kernel_forms

def main():
    args = e2e_setup.parse_and_prepare(__doc__.splitlines()[0])
    work = args.work
    failures, summary = [], []
    for policy in ("fp8-tensorwise", "fp8-delayed"):
        runs, kernels = {}, {}
        variants = {"true": ["--fp8-fusion=true"],
                    "false": ["--fp8-fusion=false", "--fuse-dual-casts=false",
                              "--fuse-classifier=false",
                              "--fuse-qkv-attention=false",
                              "--fuse-cast-scales=false",
                              "--batch-fp8-state-updates=false",
                              "--batch-fp8-state-scales=false",
                              "--hoist-transposed-casts=false"],
                    "layout-off": ["--fp8-transpose-casts=false",
                                   "--fp8-reuse-scales=false"]}
        not_tn, rts = {}, {}
        for fusion, extra in variants.items():
            art = "%s/%s-%s.so" % (work, policy, fusion)
            flags = [args.model, "--precision=" + policy, *extra]
            subprocess.run([args.gptc, *flags, "-o", art], check=True)
            rt = subprocess.run([args.gptc, *flags, "--emit=rt", "-o", "-"],
                                check=True, capture_output=True, text=True).stdout
            kernels[fusion] = (rt.count('rt.kernel "amax"'),
                               len(re.findall(r'rt\.kernel "(?:scale_|state_)?quantize_fp8(?:_transposed)?(?:_bgrad)?"', rt)) +
                               2 * len(re.findall(r'rt\.kernel "(?:scale_|state_)?quantize_fp8_dual(?:_bgrad)?"', rt)),
                               sum(1 for _, work in kernel_forms(rt) if work),
                               rt.count('rt.kernel "scale_from_amax"') +
                               rt.count('rt.kernel "fp8_state_scale"'))
            rts[fusion] = rt
            # Plain tensorwise FP8 GEMMs not in the TN layout (trans_a 0,
            # trans_b 1).
            not_tn[fusion] = sum(
                1 for form, d in gemm_calls(rt) if form == "fp8" and
                (d.get("trans_a", 0) != 0 or d.get("trans_b", 0) != 1))
            log = art + ".jsonl"
            subprocess.run([args.gptrun, art, "--data", work + "/data/train_*.bin",
                            "--steps", "8", "--lr", "1e-3", "--fp8-stats-every", "4",
                            "--log", log, "--quiet"], check=True,
                           stdout=subprocess.DEVNULL)
            with open(log) as f:
                runs[fusion] = [json.loads(line) for line in f]
        fused = runs["true"]
        for other in ("false", "layout-off"):
            plain = runs[other]
            if [r["loss"] for r in fused] != [r["loss"] for r in plain]:
                failures.append("%s: losses differ from %s: %s vs %s" % (
                    policy, other, [r["loss"] for r in fused],
                    [r["loss"] for r in plain]))
            if [r.get("fp8") for r in fused] != [r.get("fp8") for r in plain]:
                failures.append("%s: FP8 statistics differ from %s" % (policy, other))
        dual = len(re.findall(r'rt\.kernel "(?:scale_|state_)?quantize_fp8_dual(?:_bgrad)?"', rts["true"]))
        bgrad = len(re.findall(r'rt\.kernel "(?:scale_|state_)?quantize_fp8_dual_bgrad"', rts["true"]))
        # Each scale made by the cast that first reads it
        # (rt-fuse-cast-scale): under current scaling none is left in
        # train_step; under delayed scaling those of the producers' fused
        # casts (layernorm, GELU, residual add) stay.
        if not kernels["true"][3] < kernels["false"][3]:
            failures.append("%s: no scale kernel folded into a cast (%d, %d "
                            "without the fusion)" % (
                                policy, kernels["true"][3], kernels["false"][3]))
        if policy == "fp8-tensorwise":
            train = rts["true"].split("func.func @train_step")[1].split("func.func @")[0]
            if 'rt.kernel "scale_from_amax"' in train or kernels["false"][3] == 0:
                failures.append("fp8-tensorwise: scale kernels left in train_step "
                                "(%d in the module, %d without the fusion)" % (
                                    kernels["true"][3], kernels["false"][3]))
        # Current scaling: the forward activations that the backward reads
        # only for grad_weight are cast both ways in the forward
        # (rt-fuse-dual-cast): dual casts without a bias gradient besides
        # the logits gradient's one.
        nobias = len(re.findall(r'rt\.kernel "(?:scale_)?quantize_fp8_dual"', rts["true"]))
        if policy == "fp8-tensorwise" and nobias < 2:
            failures.append("fp8-tensorwise: no forward activation cast both "
                            "ways (%d dual casts without bias gradient)" % nobias)
        # Current scaling: each bias gradient of an FP8 GEMM joins its
        # output gradient's dual cast (rt-fuse-dual-cast).
        if policy == "fp8-tensorwise" and bgrad == 0:
            failures.append("fp8-tensorwise: no bias gradient summed by a dual cast")
        # Delayed scaling: by the transposed cast, alone with its own scale.
        # Delayed scaling: the history updates batched at the end of
        # train_step (rt-batch-fp8-state-updates).
        updates = {v: rts[v].count('rt.kernel "fp8_state_update"') for v in ("true", "false")}
        if policy == "fp8-delayed" and ('rt.kernel "fp8_state_update_batch"' not in rts["true"]
                                        or not updates["true"] < updates["false"]):
            failures.append("fp8-delayed: no history update batched (%d separate, "
                            "%d without the pass)" % (updates["true"], updates["false"]))
        # Delayed scaling: the transposed casts of the forward activations
        # the backward reads only for grad_weight run right after their
        # producers (rt-hoist-transposed-casts), or within them once
        # rt-fuse-producer-dual-cast joined the two (the forward _dual
        # producers).
        if policy == "fp8-delayed":
            def hoisted(rt):
                train = rt.split("func.func @train_step")[1].split("func.func @")[0]
                forms = kernel_forms(train)
                return sum(1 for a, b in zip(forms, forms[1:])
                           if a[0].endswith("_fwd") and a[1] == "cast"
                           and b[0] == "state_quantize_fp8_transposed") + \
                    sum(1 for a in forms if a[0].endswith("_fwd") and a[1] == "dual_cast")
            if hoisted(rts["true"]) == 0 or hoisted(rts["false"]) != 0:
                failures.append("fp8-delayed: transposed casts right after their "
                                "producers %d (%d without the pass)" % (
                                    hoisted(rts["true"]), hoisted(rts["false"])))
        # Delayed scaling: the scales the casts do not make themselves are
        # made at the start of train_step (rt-batch-fp8-state-scales).
        if policy == "fp8-delayed":
            train = rts["true"].split("func.func @train_step")[1].split("func.func @")[0]
            if ('rt.kernel "fp8_state_scale"' in train
                    or 'rt.kernel "fp8_state_scale_batch"' not in train
                    or 'rt.kernel "fp8_state_scale_batch"' in rts["false"]):
                failures.append("fp8-delayed: scale kernels left in train_step "
                                "or none batched")
        if policy == "fp8-delayed" and not re.search(r'rt\.kernel "(?:state_)?quantize_fp8_transposed_bgrad"', rts["true"]):
            failures.append("fp8-delayed: no bias gradient summed by a transposed cast")
        # Both policies make pairs of casts in one read; under delayed
        # scaling once two operands share a history
        # (rt-fuse-delayed-dual-cast): each weight's forward and
        # grad_input casts, and output gradients' two casts with the bias
        # gradient.
        if dual == 0:
            failures.append("%s: no pair of casts made in one read" % policy)
        if policy == "fp8-delayed":
            train = rts["true"].split("func.func @train_step")[1].split("func.func @")[0]
            params = set(re.findall(r'(%\w+) = rt\.view @params\[', train))
            weight_duals = [m for m in re.findall(
                r'rt\.kernel "state_quantize_fp8_dual" ins\((%\w+),', train) if m in params]
            weight_transposed = [m for m in re.findall(
                r'rt\.kernel "state_quantize_fp8_transposed" ins\((%\w+),', train) if m in params]
            if (not weight_duals or weight_transposed or bgrad == 0
                    or "quantize_fp8_dual" in rts["false"]):
                failures.append("fp8-delayed: weights cast both ways in one read "
                                "%d, separately %d; gradients with the bias "
                                "gradient %d" % (len(weight_duals),
                                                 len(weight_transposed), bgrad))
        # Delayed scaling: GELU's output and gradient and the layernorms'
        # outputs are never stored in bf16, their producer writes both FP8
        # layouts (rt-fuse-producer-dual-cast).
        if policy == "fp8-delayed":
            train = rts["true"].split("func.func @train_step")[1].split("func.func @")[0]
            forms = kernel_forms(train)
            unfused_duals = sum(1 for _, work in kernel_forms(rts["false"])
                                if work == "dual_cast")
            for producers, names in (
                    ("GELU", ("gelu_fwd", "gelu_bwd")),
                    ("layernorm", ("layernorm_fwd", "add_layernorm_fwd"))):
                duals = sum(1 for k, work in forms if k in names and work == "dual_cast")
                alone = sum(1 for k, work in forms if k in names and work == "cast")
                if duals == 0 or alone or unfused_duals:
                    failures.append("fp8-delayed: %s producers writing both "
                                    "layouts %d, casting once %d" % (
                                        producers, duals, alone))
                summary.append("fp8-delayed: %d %s producers write both FP8 "
                               "layouts" % (duals, producers))
            # The attention output coded as the attention writes it
            # (rt-fuse-producer-cast), its scale made before it.
            attention_casts = sum(1 for k, work in forms
                                  if k == "attention_fwd_packed" and work == "cast")
            if attention_casts == 0 or ("attention_fwd_packed", "cast") in kernel_forms(rts["false"]):
                failures.append("fp8-delayed: attention outputs cast by the "
                                "attention %d" % attention_casts)
            summary.append("fp8-delayed: %d attention outputs cast by the "
                           "attention" % attention_casts)
        if not kernels["true"][0] < kernels["layout-off"][0]:
            failures.append("%s: no amax shared (separate amax kernels %d, "
                            "%d without fp8-reuse-scales)" % (
                                policy, kernels["true"][0], kernels["layout-off"][0]))
        if not_tn["true"] != 0 or not_tn["layout-off"] == 0:
            failures.append("%s: FP8 GEMMs not reading TN operands: %d "
                            "(%d without fp8-transpose-casts)" % (
                                policy, not_tn["true"], not_tn["layout-off"]))
        if not kernels["true"][0] < kernels["false"][0] or kernels["true"][2] == 0:
            failures.append("%s: no fusion happened (amax, quantize, fused "
                            "kernels with fusion %s, without %s)"
                            % (policy, kernels["true"], kernels["false"]))
        if policy == "fp8-delayed" and not kernels["true"][1] < kernels["false"][1]:
            failures.append("fp8-delayed: no cast was fused: %s vs %s"
                            % (kernels["true"], kernels["false"]))
        summary.append("%s: separate amax kernels %d -> %d with fusion, "
                       "%d -> %d with shared scales; quantize %d -> %d, "
                       "fused kernels %d; non-TN FP8 GEMMs %d -> %d; "
                       "%d pairs of casts in one read (%d with the bias "
                       "gradient); scale kernels %d -> %d; "
                       "final loss %.7f in all three" % (
                           policy, kernels["false"][0], kernels["true"][0],
                           kernels["layout-off"][0], kernels["true"][0],
                           kernels["false"][1], kernels["true"][1],
                           kernels["true"][2], not_tn["layout-off"],
                           not_tn["true"], dual, bgrad, kernels["false"][3],
                           kernels["true"][3], fused[-1]["loss"]))
    # Rowwise casts are transposed too (their scales follow their rows):
    # the same losses with and without, and every rowwise GEMM "TN".
    rowwise, rowwise_rt = {}, {}
    for transpose in ("true", "false", "unfused"):
        art = "%s/fp8-rowwise-%s.so" % (work, transpose)
        flags = [args.model, "--precision=fp8-rowwise",
                 "--fp8-transpose-casts=" + ("false" if transpose == "false" else "true")]
        if transpose == "unfused":
            flags.append("--fuse-cast-scales=false")
        subprocess.run([args.gptc, *flags, "-o", art], check=True)
        rt = subprocess.run([args.gptc, *flags, "--emit=rt", "-o", "-"],
                            check=True, capture_output=True, text=True).stdout
        rowwise_rt[transpose] = rt
        not_tn_rowwise = sum(
            1 for form, d in gemm_calls(rt) if form == "fp8_rowwise"
            and (d.get("trans_a", 0) != 0 or d.get("trans_b", 0) != 1))
        log = art + ".jsonl"
        subprocess.run([args.gptrun, art, "--data", work + "/data/train_*.bin",
                        "--steps", "8", "--lr", "1e-3", "--log", log, "--quiet"],
                       check=True, stdout=subprocess.DEVNULL)
        with open(log) as f:
            rowwise[transpose] = ([json.loads(line)["loss"] for line in f],
                                  not_tn_rowwise)
    # A cast along rows makes its amaxes, scales and codes in one kernel
    # (rt-fuse-rowwise-cast): the same losses, three kernels fewer each.
    # A transposed cast along columns makes its scales (rt-fuse-cast-scale),
    # and an output gradient's sums its bias gradient (rt-fuse-dual-cast).
    fused_rows = rowwise_rt["true"].count('rt.kernel "amax_quantize_rows"')
    fused_cols = len(re.findall(
        r'rt\.kernel "scale_quantize_rows_transposed(_bgrad)?"', rowwise_rt["true"]))
    rowwise_bgrad = rowwise_rt["true"].count(
        'rt.kernel "scale_quantize_rows_transposed_bgrad"')
    if (rowwise["true"][0] != rowwise["unfused"][0] or fused_rows == 0
            or fused_cols == 0 or rowwise_bgrad == 0
            or 'rt.kernel "row_scales"' in rowwise_rt["true"]
            or 'amax_quantize_rows' in rowwise_rt["unfused"]
            or 'scale_quantize_rows' in rowwise_rt["unfused"]):
        failures.append("fp8-rowwise: %d casts along rows in one kernel, %d "
                        "along columns making their scales (%d with the bias "
                        "gradient); losses %s vs %s without"
                        % (fused_rows, fused_cols, rowwise_bgrad,
                           rowwise["true"][0], rowwise["unfused"][0]))
    if rowwise["true"][0] != rowwise["false"][0]:
        failures.append("fp8-rowwise: losses differ with transposed casts: %s vs %s"
                        % (rowwise["true"][0], rowwise["false"][0]))
    if rowwise["true"][1] != 0 or rowwise["false"][1] == 0:
        failures.append("fp8-rowwise: non-TN rowwise GEMMs %d with transposed "
                        "casts, %d without" % (rowwise["true"][1], rowwise["false"][1]))
    summary.append("fp8-rowwise: non-TN FP8 GEMMs %d -> %d, %d casts along "
                   "rows in one kernel, %d along columns making their scales "
                   "(%d with the bias gradient), final loss %.7f in all three"
                   % (rowwise["false"][1], rowwise["true"][1], fused_rows,
                      fused_cols, rowwise_bgrad, rowwise["true"][0][-1]))
    if failures:
        print("FAILED: " + "; ".join(failures))
        return 1
    print("PASSED: bit-identical with and without fusion and layout passes; " + "; ".join(summary))
    return 0


if __name__ == "__main__":
    sys.exit(main())
