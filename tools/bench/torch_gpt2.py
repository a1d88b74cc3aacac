#!/usr/bin/env python3
"""PyTorch reference for gptc's GPU benchmark: GPT-2 training tokens/s, bf16 and FP8.

The PyTorch half of the side-by-side runs in tools/device-check.sh (DESIGN.md
section 8): a plain GPT-2 in PyTorch, trained with the same recipe gptc
compiles, timed on the same GPU in the same run. Two modes:

  training (default)  --config tiny|124m|774m --variant fp32|bf16|fp8
      GPT-2: token + position embedding, pre-LN blocks (fused qkv Linear,
      causal scaled-dot-product attention, GELU(tanh) MLP 4x), final LN,
      lm_head tied to wte, vocabulary padded to 50304 (loss over the 50257
      real columns only), biases on the block Linears. AdamW (lr 6e-4
      constant, betas 0.9/0.95, eps 1e-8, weight decay 0.1 on tensors of
      rank >= 2 only), gradient-norm clip 1.0, one micro-batch per step.
        fp32  no autocast (the CPU smoke test's variant)
        bf16  bf16 autocast, fp32 master weights, torch.compile
        fp8   bf16 plus every block Linear and lm_head as an FP8 GEMM
              (torch._scaled_mm, per-tensor current scaling; see Fp8Matmul)
      Data: synthetic random tokens from a fixed seed (the loss then stays
      near ln(50257) = 10.8; tokens/s does not depend on the values), or
      --data GLOB of llm.c token shards. Every batch is on the device before
      the clock starts: the timing is the training step alone.
      After --warmup steps (compilation happens there), --steps optimizer
      steps are timed with torch.cuda.synchronize() and the wall clock.
  --gemm-table
      For GPT-2 124M and 774M: each Linear's GEMMs (forward, grad-input,
      grad-weight) timed with CUDA events as bf16 torch.matmul, as FP8
      torch._scaled_mm on pre-cast operands, and as FP8 including the cast
      (amax, scale, cast of both operands).
  --attention-table
      For GPT-2 124M and 774M shapes (micro-batch x heads x 1024 x 64):
      causal F.scaled_dot_product_attention in bf16, forward and backward
      (dq, dk, dv) timed with CUDA events -- what attention-bench times for
      gptc's kernels in the same device-check run.

Output: a human line and one line `RESULT {json}` per run or GEMM shape.
Exit status: 0 done; 1 failed (including a smoke run whose loss did not
fall); 2 refused: this machine or torch lacks what was asked for (no CUDA,
no float8 dtypes, compute capability below 8.9 for FP8, FP8 on the CPU), with
one line saying what is missing and the fix.

  --device cpu --smoke   tiny config, fp32, 10 steps on one fixed batch;
                         checks the loss fell (ctest bench-torch-gpt2-smoke;
                         runs on Debian's torch 1.13 under /usr/bin/python3).
"""
import argparse
import contextlib
import glob
import inspect
import json
import math
import os
import sys
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

PROGRAM = "torch_gpt2"

VOCAB = 50257
# 50257 rounded up to a multiple of 128: GEMM-friendly, and gptc's padded_vocab.
PADDED_VOCAB = 50304

# The sizes of gptc's presets (models/gpt2.cpp; gpt2-tiny is models/gpt2-tiny.mlir).
CONFIGS = {
    "tiny": dict(depth=4, width=128, heads=4, seq=64),
    "124m": dict(depth=12, width=768, heads=12, seq=1024),
    "774m": dict(depth=36, width=1280, heads=20, seq=1024),
}

# Largest finite magnitudes of the two FP8 formats (OCP FP8 spec): E4M3 (the
# "fn" variant: no infinities, one NaN code) reaches 448, E5M2 57344. E4M3
# has one more mantissa bit, so it carries values (activations, weights); E5M2
# has the wider exponent range that gradients need.
E4M3_MAX = 448.0
E5M2_MAX = 57344.0
# Floor for amax: an all-zero tensor would otherwise give an infinite scale.
AMAX_FLOOR = 1e-12

H100_H200_DENSE_BF16_FLOPS = 989e12


class Refusal(Exception):
    """This machine or torch cannot do what was asked: one line, exit 2."""


class SmokeFailure(Exception):
    """The smoke run's own checks failed: one line, exit 1."""


# ----------------------------------------------------------------- capabilities


def has_float8():
    return hasattr(torch, "float8_e4m3fn") and hasattr(torch, "float8_e5m2") and hasattr(torch, "_scaled_mm")


def require_cuda():
    if not torch.cuda.is_available():
        raise Refusal("--device cuda: torch %s sees no CUDA device (torch.cuda.is_available() is False); "
                      "run on the GPU machine, or use --device cpu --smoke here" % torch.__version__)


def require_fp8(what, alternative=None):
    """FP8 GEMMs need float8 dtypes in torch and FP8 tensor cores (compute capability 8.9+).

    alternative: what to run instead on this machine (named in the message), if anything.
    """
    if not has_float8():
        raise Refusal("%s: torch %s has no torch.float8_e4m3fn/float8_e5m2/_scaled_mm; FP8 needs "
                      "PyTorch >= 2.1 with CUDA: use a newer torch%s"
                      % (what, torch.__version__, " or " + alternative if alternative else ""))
    require_cuda()
    major, minor = torch.cuda.get_device_capability()
    if (major, minor) < (8, 9):
        raise Refusal("%s: %s has compute capability %d.%d, FP8 GEMMs need 8.9 or newer (Ada, Hopper): %s"
                      % (what, torch.cuda.get_device_name(), major, minor,
                         "use " + alternative + " on this GPU" if alternative else "run on a newer GPU"))


# ------------------------------------------------------------------------ FP8


def to_fp8(t, fp8_dtype, fp8_max):
    """Per-tensor current scaling: returns (t in FP8, dequantization scale).

    scale = fp8_max / amax(t) maps the largest magnitude of this very tensor
    onto the largest finite FP8 value, so nothing overflows and small values
    keep as much of the format's range as they can. The clamp is insurance:
    float32 rounding may put amax * scale a hair past fp8_max, and PyTorch's
    cast to E4M3fn turns values beyond its range into NaN (the format has no
    infinity) instead of saturating. The multiply runs in float32: a bf16 t times a float32 0-dim scale would
    otherwise stay bf16 and round once more before the cast. _scaled_mm takes
    the dequantization scale (1/scale, what multiplies the FP8 values back).
    """
    amax = t.detach().abs().max().float().clamp(min=AMAX_FLOOR)
    quant_scale = fp8_max / amax
    t_fp8 = (t.float() * quant_scale).clamp(-fp8_max, fp8_max).to(fp8_dtype)
    return t_fp8, quant_scale.reciprocal()


def column_major(t):
    """The same matrix with column-major strides (_scaled_mm's second operand must be)."""
    return t.t().contiguous().t()


class Fp8Matmul(torch.autograd.Function):
    """y = x @ w.T with all three GEMMs of a Linear in FP8 (torch._scaled_mm).

    forward:     y  = x[E4M3] @ w[E4M3].T          (fast accumulation)
    grad input:  dx = dy[E5M2] @ w[E4M3]
    grad weight: dw = dy[E5M2].T @ x[E4M3]          (float32, the master dtype)

    Every operand gets its own per-tensor scale from its current amax
    (to_fp8). The forward uses use_fast_accum=True (Hopper's faster FP8
    accumulation, fine for activations); the backward GEMMs do not, since
    dw sums over all B*T tokens and gradients are where lost low bits hurt.
    _scaled_mm wants its first operand row-major and its second
    column-major, every dimension a multiple of 16 (B*T and the width are
    checked in check_training_capabilities; the rest are 3 or 4 widths or
    the padded vocabulary, 50304 = 16 x 3144), and at least one operand in
    E4M3 (E5M2 x E5M2 has no kernel): all three calls qualify. The FP8
    copies of x and w are what is saved for the backward.
    """

    @staticmethod
    def forward(ctx, x2d, weight):
        x_fp8, x_dequant = to_fp8(x2d, torch.float8_e4m3fn, E4M3_MAX)
        w_fp8, w_dequant = to_fp8(weight, torch.float8_e4m3fn, E4M3_MAX)
        # weight is (out, in) row-major, so weight.T is (in, out) column-major:
        # exactly the layout the second operand needs, with no copy.
        y = torch._scaled_mm(x_fp8.contiguous(), w_fp8.t(), scale_a=x_dequant, scale_b=w_dequant,
                             out_dtype=torch.bfloat16, use_fast_accum=True)
        ctx.save_for_backward(x_fp8, x_dequant, w_fp8, w_dequant)
        ctx.input_dtype = x2d.dtype
        return y

    @staticmethod
    def backward(ctx, grad_y):
        x_fp8, x_dequant, w_fp8, w_dequant = ctx.saved_tensors
        g_fp8, g_dequant = to_fp8(grad_y, torch.float8_e5m2, E5M2_MAX)
        g_fp8 = g_fp8.contiguous()
        # dx (M, in) = dy (M, out) @ w (out, in): w must be column-major here.
        grad_x = torch._scaled_mm(g_fp8, column_major(w_fp8), scale_a=g_dequant, scale_b=w_dequant,
                                  out_dtype=torch.bfloat16)
        # dw (out, in) = dy.T (out, M) @ x (M, in): dy.T row-major, x column-major.
        grad_w = torch._scaled_mm(g_fp8.t().contiguous(), column_major(x_fp8), scale_a=g_dequant,
                                  scale_b=x_dequant, out_dtype=torch.float32)
        return grad_x.to(ctx.input_dtype), grad_w


def fp8_linear(x, weight, bias=None):
    lead = x.shape[:-1]
    y = Fp8Matmul.apply(x.reshape(-1, x.shape[-1]), weight).reshape(*lead, weight.shape[0])
    if bias is not None:
        # A float32 bias would promote the bf16 output to float32 (and double
        # the traffic of everything after it); nn.Linear under autocast casts too.
        y = y + bias.to(y.dtype)
    return y


class Fp8Linear(nn.Linear):
    def forward(self, x):
        return fp8_linear(x, self.weight, self.bias)


# ---------------------------------------------------------------------- model


def causal_attention(q, k, v):
    if hasattr(F, "scaled_dot_product_attention"):
        return F.scaled_dot_product_attention(q, k, v, is_causal=True)
    # torch < 2.0 (Debian's 1.13, the CPU smoke test) has no SDPA: the same
    # arithmetic spelled out.
    t = q.shape[-2]
    scores = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(q.shape[-1]))
    future = torch.ones(t, t, dtype=torch.bool, device=q.device).triu(1)
    return F.softmax(scores.masked_fill(future, float("-inf")), dim=-1) @ v


class Attention(nn.Module):
    def __init__(self, width, heads, linear):
        super().__init__()
        self.heads = heads
        self.qkv = linear(width, 3 * width)
        self.proj = linear(width, width)

    def forward(self, x):
        b, t, c = x.shape
        q, k, v = self.qkv(x).split(c, dim=2)
        # (b, t, c) -> (b, heads, t, head_dim): head h owns columns [h*hd, (h+1)*hd).
        q, k, v = (z.view(b, t, self.heads, c // self.heads).transpose(1, 2) for z in (q, k, v))
        y = causal_attention(q, k, v)
        return self.proj(y.transpose(1, 2).reshape(b, t, c))


class Mlp(nn.Module):
    def __init__(self, width, linear):
        super().__init__()
        self.fc = linear(width, 4 * width)
        self.proj = linear(4 * width, width)

    def forward(self, x):
        return self.proj(F.gelu(self.fc(x), approximate="tanh"))


class Block(nn.Module):
    def __init__(self, width, heads, linear):
        super().__init__()
        self.ln_1 = nn.LayerNorm(width)
        self.attn = Attention(width, heads, linear)
        self.ln_2 = nn.LayerNorm(width)
        self.mlp = Mlp(width, linear)

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class GPT2(nn.Module):
    """Pre-LN GPT-2; parameter names follow gptc's (h.0.attn.qkv.weight, ...)."""

    def __init__(self, depth, width, heads, seq, fp8=False):
        super().__init__()
        linear = Fp8Linear if fp8 else nn.Linear
        self.head = fp8_linear if fp8 else F.linear
        self.wte = nn.Parameter(torch.empty(PADDED_VOCAB, width))
        self.wpe = nn.Parameter(torch.empty(seq, width))
        self.h = nn.ModuleList(Block(width, heads, linear) for _ in range(depth))
        self.ln_f = nn.LayerNorm(width)
        self.init_like_gpt2(depth)

    def init_like_gpt2(self, depth):
        # GPT-2's (and gptc's, see models/gpt2-tiny.mlir): normal(0.02), the
        # two projections into the residual stream scaled by 1/sqrt(2*depth),
        # biases zero, LayerNorms the identity.
        with torch.no_grad():
            for name, p in self.named_parameters():
                if p.dim() >= 2:
                    std = 0.02 / math.sqrt(2 * depth) if name.endswith("proj.weight") else 0.02
                    p.normal_(0.0, std)
                elif name.endswith("ln_1.weight") or name.endswith("ln_2.weight") or name == "ln_f.weight":
                    p.fill_(1.0)
                else:
                    p.zero_()

    def forward(self, tokens, targets):
        t = tokens.shape[1]
        x = F.embedding(tokens, self.wte) + self.wpe[:t]
        for block in self.h:
            x = block(x)
        logits = self.head(self.ln_f(x), self.wte)  # lm_head tied to wte
        # The padding columns are not tokens: the loss sees the real 50257.
        real = logits[..., :VOCAB].reshape(-1, VOCAB)
        return F.cross_entropy(real.float(), targets.reshape(-1))


def training_flops_per_token(model, config):
    """Training FLOPs per token, the formula of gptc's manifest.

    nanoGPT's estimate_mfu, 6*N + 12*L*H*Q*T, with N counted as nanochat's
    estimate_flops and gptc (compiler/driver/ModelSummary.cpp) count it: the
    weight elements of every matmul (block Linears and the tied lm_head =
    wte, padded rows included), 6 FLOPs each (2 forward, 4 backward); wpe
    and the embedding lookup are no matmul. nanoGPT's N would also count
    biases and LayerNorm parameters: under 0.1% more at 124M. The second term
    is attention's QK^T and AV: 12 * depth * width * seq. Using gptc's
    formula makes the two MFUs of the table comparable.
    """
    matmul_weights = model.wte.numel() + sum(
        m.weight.numel() for m in model.modules() if isinstance(m, nn.Linear))
    return 6 * matmul_weights + 12 * config["depth"] * config["width"] * config["seq"]


def adamw_for(model, lr, device):
    params = list(model.parameters())
    groups = [
        {"params": [p for p in params if p.dim() >= 2], "weight_decay": 0.1},
        {"params": [p for p in params if p.dim() < 2], "weight_decay": 0.0},
    ]
    extra = {}
    # The fused CUDA AdamW: what a tuned PyTorch run uses (nanoGPT too).
    if device.type == "cuda" and "fused" in inspect.signature(torch.optim.AdamW).parameters:
        extra["fused"] = True
    return torch.optim.AdamW(groups, lr=lr, betas=(0.9, 0.95), eps=1e-8, **extra)


# ----------------------------------------------------------------------- data


def read_shard(path):
    """llm.c token shard: 256 x int32 header (magic 20240520, version 1, count), uint16 tokens."""
    header = np.fromfile(path, dtype="<i4", count=256)
    if header.size != 256 or header[0] != 20240520 or header[1] != 1:
        found = tuple(int(v) for v in header[:2])
        raise Refusal("--data %s: header (magic, version) is %s, expected (20240520, 1): not an llm.c "
                      "token shard; write shards with tools/make-text-shards.py or gpt-data" % (path, found))
    count = int(header[2])
    expected_bytes = 256 * 4 + 2 * count
    if os.path.getsize(path) != expected_bytes:
        raise Refusal("--data %s: %d bytes, the header's %d tokens need %d: the shard is truncated "
                      "or damaged; rewrite it" % (path, os.path.getsize(path), count, expected_bytes))
    return np.memmap(path, dtype="<u2", mode="r", offset=256 * 4, shape=(count,))


def shard_batches(pattern, count, batch, seq):
    """`count` (batch, seq + 1) windows read in order through the shards, wrapping around."""
    paths = sorted(glob.glob(pattern))
    if not paths:
        raise Refusal("--data %r matches no file: give a glob of llm.c token shards, e.g. 'data/train_*.bin'"
                      % pattern)
    window = batch * seq + 1
    shards = [(p, s) for p, s in ((p, read_shard(p)) for p in paths) if s.size >= window]
    if not shards:
        raise Refusal("--data %r: every shard holds fewer than %d tokens (micro-batch %d x seq %d + 1); "
                      "use bigger shards or a smaller --micro-batch" % (pattern, window, batch, seq))
    out, shard, pos = [], 0, 0
    while len(out) < count:
        path, tokens = shards[shard]
        if pos + window > tokens.size:
            shard, pos = (shard + 1) % len(shards), 0
            continue
        piece = np.asarray(tokens[pos:pos + window], dtype=np.int64)
        if piece.max() >= VOCAB:
            raise Refusal("--data %s holds token %d, expected ids below %d (GPT-2's vocabulary): "
                          "tokenize with the GPT-2 tokenizer" % (path, int(piece.max()), VOCAB))
        out.append(torch.from_numpy(piece))
        pos += batch * seq  # llm.c's stride: the next window starts at this one's last target
    return out


def synthetic_batches(count, batch, seq, seed):
    gen = torch.Generator().manual_seed(seed)
    return [torch.randint(0, VOCAB, (batch * seq + 1,), generator=gen) for _ in range(count)]


# ------------------------------------------------------------------- training


def resolve(args):
    """Fills the defaults that depend on --device and --smoke."""
    if args.smoke:
        args.config = args.config or "tiny"
        args.steps = 10 if args.steps is None else args.steps
        args.warmup = 0 if args.warmup is None else args.warmup
        args.micro_batch = 4 if args.micro_batch is None else args.micro_batch
    args.config = args.config or "124m"
    args.variant = args.variant or ("bf16" if args.device == "cuda" else "fp32")
    args.steps = 30 if args.steps is None else args.steps
    args.warmup = 10 if args.warmup is None else args.warmup
    args.micro_batch = 16 if args.micro_batch is None else args.micro_batch
    if args.compile is None:
        args.compile = args.device == "cuda" and args.variant != "fp32"
    if args.steps < 1 or args.warmup < 0 or args.micro_batch < 1:
        raise Refusal("--steps %d, --warmup %d, --micro-batch %d: expected steps >= 1, warmup >= 0, "
                      "micro-batch >= 1" % (args.steps, args.warmup, args.micro_batch))


def check_training_capabilities(args, config):
    if args.device == "cpu":
        if args.variant == "fp8":
            raise Refusal("--variant fp8 needs a CUDA GPU with FP8 tensor cores (compute capability 8.9+); "
                          "on --device cpu use --variant fp32 or bf16")
        if args.compile:
            raise Refusal("--compile is for --device cuda (the benchmark); drop it on --device cpu")
        return
    require_cuda()
    if args.variant == "bf16" and not torch.cuda.is_bf16_supported():
        raise Refusal("--variant bf16: %s does not support bf16 (compute capability 8.0+ needed); "
                      "use --variant fp32" % torch.cuda.get_device_name())
    if args.variant == "fp8":
        require_fp8("--variant fp8", "--variant bf16")
        tokens = args.micro_batch * config["seq"]
        if tokens % 16 or config["width"] % 16:
            raise Refusal("--variant fp8: micro-batch x seq = %d and width = %d must be multiples of 16 "
                          "(torch._scaled_mm's rule); pick another --micro-batch" % (tokens, config["width"]))
    if args.compile and not hasattr(torch, "compile"):
        raise Refusal("torch %s has no torch.compile (PyTorch 2.0+): pass --no-compile or use a newer torch"
                      % torch.__version__)


def run_training(args):
    resolve(args)
    config = CONFIGS[args.config]
    check_training_capabilities(args, config)
    device = torch.device(args.device)
    if device.type == "cuda" and args.variant == "fp32":
        # Only the fp32 variant has float32 GEMMs (and PyTorch 2.9+ refuses
        # to mix this API with the newer fp32_precision one in Inductor).
        torch.backends.cuda.matmul.allow_tf32 = True
        torch.backends.cudnn.allow_tf32 = True

    torch.manual_seed(args.seed)
    model = GPT2(**config, fp8=args.variant == "fp8").to(device)
    optimizer = adamw_for(model, args.lr, device)
    params = list(model.parameters())
    step_model = torch.compile(model) if args.compile else model
    if args.variant == "fp32":
        autocast = contextlib.nullcontext
    else:
        def autocast():
            return torch.autocast(device_type=device.type, dtype=torch.bfloat16)

    batch, seq = args.micro_batch, config["seq"]
    total = args.warmup + args.steps
    # --smoke: one fixed batch, repeated, so the loss must fall as the model fits it.
    distinct = 1 if args.smoke else total
    if args.data:
        windows = shard_batches(args.data, distinct, batch, seq)
    else:
        windows = synthetic_batches(distinct, batch, seq, args.seed)
    windows = windows * (total // distinct)
    # All on the device before the clock starts: the timing is the step alone.
    batches = [(w[:-1].view(batch, seq).to(device), w[1:].view(batch, seq).to(device)) for w in windows]

    def train_step(tokens, targets):
        optimizer.zero_grad(set_to_none=True)
        with autocast():
            loss = step_model(tokens, targets)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        optimizer.step()
        return loss.detach()

    def synchronize():
        if device.type == "cuda":
            torch.cuda.synchronize()

    first_loss = None
    warmup_start = time.perf_counter()
    for i, (tokens, targets) in enumerate(batches[:args.warmup]):
        loss = train_step(tokens, targets)
        first_loss = loss if first_loss is None else first_loss
        if i == 0:
            # Compilation happens here: said at once, so a run cut short by
            # a time limit still shows where its time went.
            synchronize()
            print("first step (compilation included): %.1f s" % (time.perf_counter() - warmup_start),
                  flush=True)
    synchronize()
    # The loss after the warm-up steps: what a run of that many steps (the
    # device check's gptc rows) compares with.
    warmup_loss = loss.item() if args.warmup > 0 else None
    start = time.perf_counter()
    for tokens, targets in batches[args.warmup:]:
        loss = train_step(tokens, targets)
        first_loss = loss if first_loss is None else first_loss
    synchronize()
    elapsed = time.perf_counter() - start
    # .item() only now: a host read inside the loop would stall the GPU queue.
    first_loss, final_loss = first_loss.item(), loss.item()

    tokens_per_step = batch * seq
    tokens_per_s = tokens_per_step * args.steps / elapsed
    flops_per_token = training_flops_per_token(model, config)
    mfu = flops_per_token * tokens_per_s / args.peak_flops
    peak_mem_gib = torch.cuda.max_memory_allocated() / 2**30 if device.type == "cuda" else None
    result = dict(framework="pytorch", variant=args.variant, config=args.config, micro_batch=batch, seq=seq,
                  steps=args.steps, tokens_per_s=round(tokens_per_s, 1),
                  step_ms=round(elapsed / args.steps * 1e3, 3), mfu=round(mfu, 5),
                  peak_mem_gib=None if peak_mem_gib is None else round(peak_mem_gib, 3),
                  final_loss=round(final_loss, 5), compiled=bool(args.compile),
                  warmup_steps=args.warmup,
                  warmup_loss=None if warmup_loss is None else round(warmup_loss, 5))
    print("pytorch %s %s GPT-2 %s%s on %s: micro-batch %d x %d, %d steps after %d warm-up: %.0f tokens/s, "
          "%.2f ms/step, MFU %.1f%% (%.3g FLOPs/token, peak %.0f TFLOP/s), peak memory %s, "
          "loss %.4f (first step %.4f), data %s"
          % (torch.__version__, args.variant, args.config, " compiled" if args.compile else "",
             torch.cuda.get_device_name() if device.type == "cuda" else "cpu", batch, seq, args.steps,
             args.warmup, tokens_per_s, result["step_ms"], mfu * 100, flops_per_token,
             args.peak_flops / 1e12, "n/a" if peak_mem_gib is None else "%.2f GiB" % peak_mem_gib,
             final_loss, first_loss,
             ("one fixed batch of " if args.smoke else "") + (args.data or "synthetic tokens (seed %d)" % args.seed)))
    print("RESULT " + json.dumps(result), flush=True)

    if args.smoke:
        if not (math.isfinite(first_loss) and math.isfinite(final_loss) and final_loss < first_loss):
            raise SmokeFailure("smoke check failed: loss went from %.4f to %.4f over %d steps on one fixed "
                               "batch, expected finite and falling: the model, optimizer or data code is broken"
                               % (first_loss, final_loss, args.warmup + args.steps))
        print("smoke check passed: loss %.4f -> %.4f over %d steps on one fixed batch"
              % (first_loss, final_loss, args.warmup + args.steps))


# ----------------------------------------------------------------- GEMM table


def gemm_shapes(config):
    """(name, m, n, k, fp8 dtype of a, fast accumulation) of every Linear's three GEMMs.

    out = a (m, k) @ b (k, n). A Linear with weight (out_f, in_f) over M = B*T
    tokens: forward (M, out_f, in_f); grad input dy @ w: (M, in_f, out_f);
    grad weight dy.T @ x: (out_f, in_f, M). FP8 types follow Fp8Matmul: the
    forward's operands E4M3, the backward's dy E5M2 against E4M3.
    """
    c = config["width"]
    linears = [("qkv", 3 * c, c), ("attn.proj", c, c), ("fc", 4 * c, c), ("mlp.proj", c, 4 * c),
               ("lm_head", PADDED_VOCAB, c)]
    m = config["micro_batch"] * config["seq"]
    for name, out_f, in_f in linears:
        yield name + ".fwd", m, out_f, in_f, "e4m3", True
        yield name + ".dgrad", m, in_f, out_f, "e5m2", False
        yield name + ".wgrad", out_f, in_f, m, "e5m2", False


GEMM_FLOP_PER_MEASUREMENT = 5e12


def time_cuda_us(fn, iters):
    for _ in range(3):
        fn()
    start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(iters):
        fn()
    stop.record()
    stop.synchronize()
    return start.elapsed_time(stop) * 1e3 / iters


def time_gemm(m, n, k, a_format, fast_accum, cast, gen):
    """(bf16 us, fp8 us, fp8 with cast us, fp8's relative error) of out (m, n) = a (m, k) @ b (k, n)."""
    a_dtype, a_max = {"e4m3": (torch.float8_e4m3fn, E4M3_MAX), "e5m2": (torch.float8_e5m2, E5M2_MAX)}[a_format]
    a = torch.randn(m, k, device="cuda", dtype=torch.bfloat16, generator=gen)
    b_rows = torch.randn(n, k, device="cuda", dtype=torch.bfloat16, generator=gen)
    b = b_rows.t()  # (k, n) column-major, as a Linear's weight.T
    a8, a_dequant = to_fp8(a, a_dtype, a_max)
    b8, b_dequant = to_fp8(b_rows, torch.float8_e4m3fn, E4M3_MAX)

    def bf16_gemm():
        return torch.matmul(a, b)

    def fp8_gemm():
        return torch._scaled_mm(a8, b8.t(), scale_a=a_dequant, scale_b=b_dequant, out_dtype=torch.bfloat16,
                                use_fast_accum=fast_accum)

    def fp8_gemm_with_cast():
        a_cast, a_cast_dequant = cast(a, a_dtype, a_max)
        b_cast, b_cast_dequant = cast(b_rows, torch.float8_e4m3fn, E4M3_MAX)
        return torch._scaled_mm(a_cast, b_cast.t(), scale_a=a_cast_dequant, scale_b=b_cast_dequant,
                                out_dtype=torch.bfloat16, use_fast_accum=fast_accum)

    # A wrong operand layout or scale shows as a large error, not as a
    # suspiciously fast time: compare with bf16 once per shape.
    reference = bf16_gemm().float()
    rel_err = ((fp8_gemm().float() - reference).norm() / reference.norm()).item()
    # About 10 ms of GEMMs per measurement at 500 TFLOP/s: long enough to
    # swamp launch overhead, short enough for the 30 shapes.
    iters = max(5, min(200, round(GEMM_FLOP_PER_MEASUREMENT / (2 * m * n * k))))
    return (time_cuda_us(bf16_gemm, iters), time_cuda_us(fp8_gemm, iters),
            time_cuda_us(fp8_gemm_with_cast, iters), rel_err)


def run_gemm_table(args):
    if args.device == "cpu":
        raise Refusal("--gemm-table times CUDA GEMMs (bf16 vs FP8 torch._scaled_mm): it needs --device cuda "
                      "on a GPU with compute capability 8.9+")
    require_fp8("--gemm-table")
    micro_batch = 16 if args.micro_batch is None else args.micro_batch
    if micro_batch < 1:
        raise Refusal("--micro-batch %d: expected a positive number of sequences" % micro_batch)
    config_names = args.gemm_configs.split(",")
    for name in config_names:
        if name not in CONFIGS:
            raise Refusal("--gemm-configs: %r is not a config; expected some of %s" % (name, ",".join(CONFIGS)))
    # The cast as the compiled training step runs it: fused kernels (amax,
    # scale, cast), not eager PyTorch's chain of separate ones.
    cast = to_fp8
    if args.compile is not False and hasattr(torch, "compile"):
        cast = torch.compile(to_fp8, dynamic=True)
    gen = torch.Generator(device="cuda").manual_seed(args.seed)

    print("GEMMs of one training step (M = micro-batch %d x seq), %s, torch %s; microseconds per GEMM "
          "(CUDA events). fp8: torch._scaled_mm on operands cast beforehand; +cast: amax, scale and cast "
          "of both operands included (%s; the backward's operand transposes are not); rel err: "
          "|fp8 - bf16| / |bf16|, a few %% from FP8 rounding, about 1.4 would mean wrong operands"
          % (micro_batch, torch.cuda.get_device_name(), torch.__version__,
             "compiled" if cast is not to_fp8 else "eager"))
    print("%-6s %-16s %7s %7s %7s %10s %10s %10s %7s %7s %9s"
          % ("config", "gemm", "m", "n", "k", "bf16 us", "fp8 us", "+cast us", "fp8 x", "+cast x", "rel err"))
    for config_name in config_names:
        config = dict(CONFIGS[config_name], micro_batch=micro_batch)
        for name, m, n, k, a_format, fast_accum in gemm_shapes(config):
            bf16_us, fp8_us, cast_us, rel_err = time_gemm(m, n, k, a_format, fast_accum, cast, gen)
            print("%-6s %-16s %7d %7d %7d %10.1f %10.1f %10.1f %7.2f %7.2f %9.2e"
                  % (config_name, name, m, n, k, bf16_us, fp8_us, cast_us, bf16_us / fp8_us,
                     bf16_us / cast_us, rel_err))
            print("RESULT " + json.dumps(dict(framework="pytorch", kind="gemm", config=config_name, name=name,
                                              m=m, n=n, k=k, bf16_us=round(bf16_us, 2),
                                              fp8_us=round(fp8_us, 2), fp8_with_cast_us=round(cast_us, 2))),
                  flush=True)
        torch.cuda.empty_cache()


def run_attention_table(args):
    if args.device == "cpu":
        raise Refusal("--attention-table times CUDA attention (F.scaled_dot_product_attention): it needs "
                      "--device cuda on a GPU")
    require_cuda()
    micro_batch = 16 if args.micro_batch is None else args.micro_batch
    if micro_batch < 1:
        raise Refusal("--micro-batch %d: expected a positive number of sequences" % micro_batch)
    gen = torch.Generator(device="cuda").manual_seed(args.seed)
    print("causal scaled_dot_product_attention, bf16, %s, torch %s; microseconds per call (CUDA events)"
          % (torch.cuda.get_device_name(), torch.__version__))
    for name in args.gemm_configs.split(","):
        if name not in CONFIGS:
            raise Refusal("--gemm-configs: %r is not a config; expected some of %s" % (name, ",".join(CONFIGS)))
        config = CONFIGS[name]
        heads, seq = config["heads"], config["seq"]
        head_dim = config["width"] // heads
        shape = (micro_batch, heads, seq, head_dim)
        q, k, v, dout = (torch.randn(shape, device="cuda", dtype=torch.bfloat16, generator=gen)
                         for _ in range(4))
        for t in (q, k, v):
            t.requires_grad_(True)
        out = F.scaled_dot_product_attention(q, k, v, is_causal=True)

        def forward():
            return F.scaled_dot_product_attention(q, k, v, is_causal=True)

        def backward():
            return torch.autograd.grad(out, (q, k, v), dout, retain_graph=True)

        fwd_us, bwd_us = time_cuda_us(forward, 20), time_cuda_us(backward, 20)
        print("%-6s B %d H %d T %d D %d: forward %.1f us, backward %.1f us"
              % (name, micro_batch, heads, seq, head_dim, fwd_us, bwd_us))
        print("RESULT " + json.dumps(dict(framework="pytorch", kind="attention", config=name, batch=micro_batch,
                                          heads=heads, seq=seq, head_dim=head_dim, fwd_us=round(fwd_us, 2),
                                          bwd_us=round(bwd_us, 2))), flush=True)
        del q, k, v, dout, out
        torch.cuda.empty_cache()


# ----------------------------------------------------------------------- main


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog="\n".join(__doc__.splitlines()[2:]))
    ap.add_argument("--config", choices=sorted(CONFIGS), help="model size (default 124m; tiny with --smoke)")
    ap.add_argument("--variant", choices=("fp32", "bf16", "fp8"),
                    help="precision (default bf16 on cuda, fp32 on cpu)")
    ap.add_argument("--device", choices=("cuda", "cpu"), default="cuda")
    ap.add_argument("--compile", dest="compile", action="store_true", default=None,
                    help="torch.compile the model (default on for cuda bf16/fp8)")
    ap.add_argument("--no-compile", dest="compile", action="store_false", default=None, help="run eagerly")
    ap.add_argument("--steps", type=int, help="timed optimizer steps (default 30; 10 with --smoke)")
    ap.add_argument("--warmup", type=int, help="untimed steps first, compilation included (default 10)")
    ap.add_argument("--micro-batch", type=int, help="sequences per step (default 16; 4 with --smoke)")
    ap.add_argument("--data", metavar="GLOB", help="llm.c token shards (default: synthetic random tokens)")
    ap.add_argument("--seed", type=int, default=1234)
    ap.add_argument("--lr", type=float, default=6e-4)
    ap.add_argument("--peak-flops", type=float, default=H100_H200_DENSE_BF16_FLOPS,
                    help="the MFU denominator, FLOP/s (default 989e12: H100/H200 SXM dense bf16 spec)")
    ap.add_argument("--smoke", action="store_true",
                    help="tiny, 10 steps on one fixed batch, check the loss falls (exit 1 if not)")
    ap.add_argument("--gemm-table", action="store_true", help="time bf16 vs FP8 GEMMs instead of training")
    ap.add_argument("--gemm-configs", default="124m,774m",
                    help="configs for --gemm-table and --attention-table (default 124m,774m)")
    ap.add_argument("--attention-table", action="store_true",
                    help="time causal bf16 attention (SDPA) forward and backward instead of training")
    args = ap.parse_args(argv)
    try:
        if args.gemm_table:
            run_gemm_table(args)
        elif args.attention_table:
            run_attention_table(args)
        else:
            run_training(args)
    except Refusal as e:
        print("%s: %s" % (PROGRAM, e), file=sys.stderr)
        return 2
    except SmokeFailure as e:
        print("%s: %s" % (PROGRAM, e), file=sys.stderr)
        return 1
    except Exception as e:  # noqa: BLE001 - only to name out-of-memory plainly; the rest re-raises
        oom = getattr(torch.cuda, "OutOfMemoryError", None)
        if oom is not None and isinstance(e, oom):
            print("%s: CUDA out of memory at --micro-batch %s: lower it (BENCH_MICRO_BATCH in "
                  "tools/device-check.sh)" % (PROGRAM, args.micro_batch), file=sys.stderr)
            return 1
        raise
    return 0


if __name__ == "__main__":
    sys.exit(main())
