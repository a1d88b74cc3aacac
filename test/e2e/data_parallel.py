#!/usr/bin/env python3
"""Data-parallel training on the CPU (gptrun --procs / --nodes over Gloo).

  equivalence  the tiny GPT (fp32) trained by 2 workers equals 1 worker with
               the same global batch (2 accumulation steps); 4 workers and
               2 workers x 2 micro-steps equal 1 worker x 4 micro-steps;
               validation and multiple-choice scoring shared by the ranks
               give the numbers one rank does.
  multinode    two launchers on this machine (--nodes 2 --node-rank 0/1
               --master 127.0.0.1:PORT --procs 1) equal --procs 2 bit for
               bit; killing the worker of node 1 ends node 0's launcher too.
  zero         ZeRO-1 (gptc --zero=1: reduce-scattered buckets, AdamW and
               its moments sharded, parameters all-gathered) with 2 and 4
               workers equals plain all-reduce; its checkpoints hold the
               unsharded optimizer state and resume bit for bit; with FP8
               gradient communication (--grad-comm fp8) the loss stays
               within 1% of f32's.
  fault        kill -9 one worker mid-run: gptrun exits non-zero at once
               naming the rank, no checkpoint is half-written, and resuming
               from the latest one continues bit for bit; a resume on another
               world size is refused; a stalled (SIGSTOPped) worker ends the
               run after --dist-timeout.

Tolerance of `equivalence`, and why. Given the same parameters, every
micro-batch's forward and backward are the same computation in both runs;
what differs is how the micro-batch gradients are added. One process
accumulates micro-step k into the gradient arena inside its kernels (GEMMs
with beta = 1, batch sums), W ranks start from zero and Gloo adds their
partial sums in ring order. Both are correctly rounded f32 sums of the same
terms grouped differently, so each element differs by a few units in the
last place of the largest term: the first step's gradients must agree within
1e-6 of each tensor's largest gradient (measured ~1.6e-7). Losses are means
of the same per-micro-batch values summed in double: within 1e-6 relative
(measured ~7e-8). From then on the parameters differ by rounding and those
differences feed back through the following steps. AdamW moves a parameter
by at most about lr per step (6e-4 here, so ~5e-3 over 8 steps) and passes a
gradient difference dg on as lr * dg / max(|g|, eps) -- at most lr * dg / eps
where the true gradient is zero and only rounding noise is left (the key
third of the qkv biases: softmax ignores a constant added to every key). The
final parameters must agree within 1e-6 in relative L2 norm over all of them
(measured ~2e-8) and 2e-6 absolute per element, under 0.05% of the distance a
parameter can travel in 8 steps (measured up to ~4e-7, on single elements of
the projection weights; the biases that only see noise differ by ~1e-7).
Tolerance of `zero`, and why. A reduce-scatter hands each rank the same
sums an all-reduce would for its slice, AdamW is element-wise, and the
gathered parameters are copies, so the one difference is the gradient norm:
each rank adds the squares of its own slices (in double) and the partial
sums are added across ranks, a different grouping of the same double sum.
After rounding to f32 the norm (and the clipping factor from it) may differ
in the last place, which moves every parameter of that step by at most
lr x 1 ulp relative; the same 1e-6 bounds as `equivalence` hold with room.
Every run pins OPENBLAS_NUM_THREADS=1: the BLAS thread count changes its
summation order too (1 vs 2 threads alone differ more than 1 vs 2 workers).
"""
import argparse
import glob
import json
import os
import shutil
import signal
import socket
import struct
import subprocess
import sys
import time

import numpy as np

import choicefile

STEPS = 8


class Runner:
    def __init__(self, args, work):
        self.args = args
        self.work = work
        shutil.rmtree(work, ignore_errors=True)
        os.makedirs(work)
        subprocess.run([sys.executable, args.shards_script, work + "/data",
                        "--licenses"], check=True, stdout=subprocess.DEVNULL)
        self.art = work + "/tiny.so"
        subprocess.run([args.gptc, args.model, "--precision=fp32", "-o", self.art],
                       check=True)
        self.env = dict(os.environ, OPENBLAS_NUM_THREADS="1")

    def command(self, *extra, timeout=60):
        return [self.args.gptrun, self.art, "--data", self.work + "/data/train_*.bin",
                "--quiet", "--seed", "7", "--dist-timeout", str(timeout), *extra]

    def run(self, *extra, check=True):
        start = time.time()
        result = subprocess.run(self.command(*extra), capture_output=True,
                                text=True, env=self.env)
        if check and result.returncode != 0:
            raise SystemExit("FAILED: %s exited %d\n%s%s" % (
                " ".join(self.command(*extra)), result.returncode,
                result.stdout, result.stderr))
        result.seconds = time.time() - start
        return result

    def start(self, *extra, timeout=60):
        return subprocess.Popen(self.command(*extra, timeout=timeout),
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True, env=self.env)


def log(path):
    with open(path) as f:
        return [json.loads(line) for line in f]


def params(dump):
    return {name: np.fromfile(os.path.join(dump, name), "<f4").astype(np.float64)
            for name in sorted(os.listdir(dump)) if name.endswith(".f32")}


def compare_curves(a, b, ref, other, worst, failures, exact=False):
    """Losses, gradient norms and validation losses of two logs: within 1e-6
    relative (or equal, with exact); the worst difference goes to worst."""
    for key in ("loss", "grad_norm", "val_loss"):
        pairs = [(x[key], y[key]) for x, y in zip(a, b) if key in x]
        if not pairs or any(key not in y for x, y in zip(a, b) if key in x):
            failures.append("%s vs %s: %s missing" % (ref, other, key))
            continue
        rel = max(abs(x - y) / abs(x) for x, y in pairs)
        worst["loss"] = max(worst["loss"], rel)
        if rel > 1e-6 or (exact and rel != 0):
            failures.append("%s vs %s: %s differs by %.3g relative" % (
                ref, other, key, rel))


def compare_final(p_ref, p, ref, other, worst, failures, exact=False):
    """Final parameters of two dumps: within 2e-6 absolute and 1e-6 relative
    L2 (or equal, with exact). False when the dumps do not match up."""
    if len(p_ref) < 50 or sorted(p_ref) != sorted(p):
        failures.append("%s vs %s: parameter files differ: %d vs %d" % (
            ref, other, len(p_ref), len(p)))
        return False
    x = np.concatenate([p_ref[n] for n in p_ref])
    y = np.concatenate([p[n] for n in p_ref])
    d_abs = np.abs(x - y).max()
    d_l2 = np.linalg.norm(x - y) / np.linalg.norm(x)
    worst["abs"], worst["l2"] = max(worst["abs"], d_abs), max(worst["l2"], d_l2)
    if d_abs > 2e-6 or d_l2 > 1e-6 or (exact and d_abs != 0):
        failures.append("%s vs %s: final parameters differ by %.3g (max abs), "
                        "%.3g (relative L2)" % (ref, other, d_abs, d_l2))
    return True


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def workers_of(launcher_pid):
    """{rank: pid} of the workers a gptrun launcher forked (from /proc)."""
    found = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % entry) as f:
                stat = f.read()
            ppid = int(stat.rsplit(")", 1)[1].split()[1])
            if ppid != launcher_pid:
                continue
            with open("/proc/%s/environ" % entry, "rb") as f:
                env = dict(item.split(b"=", 1) for item in f.read().split(b"\0")
                           if b"=" in item)
            if b"RANK" in env:
                found[int(env[b"RANK"])] = int(entry)
        except (OSError, ValueError, IndexError):
            continue
    return found


def wait_for_steps(path, count, proc, limit=120):
    """Returns once the JSONL log at `path` has `count` lines."""
    deadline = time.time() + limit
    while time.time() < deadline:
        if proc.poll() is not None:
            raise SystemExit("FAILED: the run ended before step %d: %s" % (
                count, proc.communicate()))
        if os.path.exists(path):
            with open(path) as f:
                if sum(1 for _ in f) >= count:
                    return
        time.sleep(0.01)
    raise SystemExit("FAILED: no step %d within %d s" % (count, limit))


def choices_from(val_shard, path, examples=11):
    """A multiple-choice file from held-out text: the true 8-token
    continuation of a 16-token context against 3 shuffles of it."""
    with open(val_shard, "rb") as f:
        count = struct.unpack("<256i", f.read(1024))[2]
        tokens = list(struct.unpack("<%dH" % count, f.read(2 * count)))
    out = []
    for i in range(examples):
        at = 1 + i * 37
        context, truth = tokens[at:at + 16], tokens[at + 16:at + 24]
        wrong = [truth[k:] + truth[:k] for k in (1, 3, 5)]
        out.append((i % 4, context, wrong[:i % 4] + [truth] + wrong[i % 4:]))
    choicefile.write(path, out)


def equivalence(r):
    failures, notes = [], []
    # 11 examples: 2 and 4 ranks score unequal shares of them.
    choices = r.work + "/choices.bin"
    choices_from(sorted(glob.glob(r.work + "/data/val_*.bin"))[0], choices)
    val = ["--val-data", r.work + "/data/val_*.bin", "--val-tokens", "1024",
           "--eval-every", "4", "--choices", choices]

    def train(name, batch, *extra):
        run = r.run("--steps", str(STEPS), "--total-batch-tokens", str(batch),
                    "--log", "%s/%s.jsonl" % (r.work, name),
                    "--dump", "%s/%s" % (r.work, name), *val, *extra)
        notes.append("%s %.1fs" % (name, run.seconds))
        return run

    train("w1x2", 512)
    # Rank 0 alone samples (the others wait in the next all-reduce).
    train("w2x1", 512, "--procs", "2", "--samples-every", "4", "--sample-tokens", "4",
          "--ckpt-dir", r.work + "/w2x1-ckpt")
    train("w4x1", 1024, "--procs", "4", "--ckpt-dir", r.work + "/w4x1-ckpt")
    train("w1x4", 1024)
    train("w2x2", 1024, "--procs", "2")

    # The ranks share validation and multiple-choice scoring; one process
    # evaluating the same final parameters (gptrun eval of the checkpoint)
    # gets the same numbers: the same validation micro-batches, and each
    # completion scored in a row of its own (fp32: rows do not interact).
    for name in ("w2x1", "w4x1"):
        final = log("%s/%s.jsonl" % (r.work, name))[-1]
        result = subprocess.run([r.args.gptrun, "eval", r.art, r.work + "/%s-ckpt" % name,
                                 *val[:4], "--choices", choices],
                                capture_output=True, text=True, env=r.env)
        out = result.stdout.split()
        try:
            val_loss = float(out[out.index("loss") + 1])
            acc_norm = float(out[out.index("acc_norm") + 1])
        except ValueError:
            failures.append("gptrun eval of %s: %s%s" % (name, result.stdout, result.stderr))
            continue
        if abs(val_loss - final["val_loss"]) > 1e-6 * val_loss or \
                abs(acc_norm - final["choices_acc_norm"]) > 5e-5:
            failures.append("%s: shared evaluation gave val loss %.7f, acc_norm %.4f; "
                            "one process on its checkpoint %.7f, %.4f" % (
                                name, final["val_loss"], final["choices_acc_norm"],
                                val_loss, acc_norm))
        notes.append("%s shared eval: val loss %.6f, acc_norm %.4f as one process" % (
            name, val_loss, acc_norm))

    worst = {"loss": 0.0, "grads": 0.0, "abs": 0.0, "l2": 0.0}
    for ref, other in (("w1x2", "w2x1"), ("w1x4", "w4x1"), ("w1x4", "w2x2")):
        a, b = log("%s/%s.jsonl" % (r.work, ref)), log("%s/%s.jsonl" % (r.work, other))
        if len(a) != STEPS or len(b) != STEPS:
            failures.append("%s/%s: expected %d log lines" % (ref, other, STEPS))
            continue
        compare_curves(a, b, ref, other, worst, failures)
        if other == "w2x1" and sum("sample" in y for y in b) != 1:
            failures.append("w2x1: expected one sample (step 4) in the log")
        # Several workers log their communication time and how long the
        # training thread waited for it, both inside the step. The wait can
        # exceed the collectives' own time by the thread wake-ups (workers
        # share 2 cores here), so it is not bounded by comm_ms.
        for y in b:
            comm, exposed = y.get("comm_ms", -1), y.get("comm_exposed_ms", -1)
            if not (0 < comm <= y["step_ms"] and 0 <= exposed <= y["step_ms"]):
                failures.append("%s step %d: comm_ms %s, comm_exposed_ms %s, "
                                "step_ms %s" % (other, y["step"], comm, exposed,
                                                y["step_ms"]))
                break
        if "comm_ms" in a[0]:
            failures.append("%s (one worker) logs comm_ms" % ref)
        g_ref, g = params(r.work + "/%s/grads0" % ref), params(r.work + "/%s/grads0" % other)
        for name in g_ref:
            scale = max(np.abs(g_ref[name]).max(), 1e-30)
            d = np.abs(g_ref[name] - g[name]).max() / scale
            worst["grads"] = max(worst["grads"], d)
            if d > 1e-6:
                failures.append("%s vs %s: gradient %s differs by %.3g of its "
                                "largest value" % (ref, other, name, d))
        p_ref, p = params(r.work + "/%s/final" % ref), params(r.work + "/%s/final" % other)
        if not compare_final(p_ref, p, ref, other, worst, failures):
            continue
        # The initial parameters come from the seed alone.
        for name in os.listdir(r.work + "/%s/init" % ref):
            with open(r.work + "/%s/init/%s" % (ref, name), "rb") as f1, \
                    open(r.work + "/%s/init/%s" % (other, name), "rb") as f2:
                if f1.read() != f2.read():
                    failures.append("%s vs %s: initial %s differs" % (ref, other, name))
    # The artifact sums its gradient buckets inside the step (gpt-data-parallel,
    # on by default); compiled with --grad-bucket-mb=0 the runtime sums the
    # whole arena after the step instead. With two ranks every sum is a + b,
    # so both must agree bit for bit.
    whole = r.work + "/whole-arena.so"
    subprocess.run([r.args.gptc, r.args.model, "--precision=fp32",
                    "--grad-bucket-mb=0", "-o", whole], check=True)
    bucketed_art, r.art = r.art, whole
    try:
        train("w2x1-whole", 512, "--procs", "2")
    finally:
        r.art = bucketed_art
    def curve(name):
        return [(x["loss"], x["grad_norm"]) for x in log("%s/%s.jsonl" % (r.work, name))]
    if curve("w2x1") != curve("w2x1-whole"):
        failures.append("2 workers: losses differ between bucketed and "
                        "whole-arena gradient sums")
    for name, value in params(r.work + "/w2x1/final").items():
        if not np.array_equal(value, params(r.work + "/w2x1-whole/final")[name]):
            failures.append("2 workers: final %s differs between bucketed and "
                            "whole-arena sums" % name)
            break
    # FP8 gradient communication (E4M3 with a shared per-bucket scale):
    # a quarter of the bytes; the loss stays within 1% of the f32 one.
    fp8 = r.work + "/fp8-comm.so"
    subprocess.run([r.args.gptc, r.args.model, "--precision=fp32",
                    "--grad-comm", "fp8", "-o", fp8], check=True)
    r.art = fp8
    try:
        train("w2x1-fp8comm", 512, "--procs", "2")
    finally:
        r.art = bucketed_art
    f32_loss = curve("w2x1")[-1][0]
    fp8_loss = curve("w2x1-fp8comm")[-1][0]
    fp8_gap = abs(fp8_loss - f32_loss) / f32_loss
    notes.append("fp8 gradient comm: last loss %.5f vs f32 %.5f (%.3f%%)" % (
        fp8_loss, f32_loss, 100 * fp8_gap))
    if not fp8_gap < 0.01 or fp8_loss == f32_loss:
        failures.append("2 workers, fp8 gradient communication: last loss %.6f "
                        "vs %.6f with f32, expected within 1%% and not equal"
                        % (fp8_loss, f32_loss))
    w2 = log(r.work + "/w2x1.jsonl")[1:]
    notes.append("2 workers: communication %.1f ms per step, %.1f ms of it "
                 "not hidden by the backward" % (
                     sum(x["comm_ms"] for x in w2) / len(w2),
                     sum(x["comm_exposed_ms"] for x in w2) / len(w2)))
    summary = ("1 vs 2 and 4 workers over %d steps: losses/grad norms/val losses "
               "max rel diff %.3g, step-0 gradients %.3g of each tensor's max, "
               "final parameters max abs %.3g, relative L2 %.3g (%s)" % (
                   STEPS, worst["loss"], worst["grads"], worst["abs"], worst["l2"],
                   ", ".join(notes)))
    return failures, summary


def zero(r):
    failures, notes = [], []
    val = ["--val-data", r.work + "/data/val_*.bin", "--val-tokens", "1024",
           "--eval-every", "4"]
    plain = r.art
    sharded = r.work + "/zero1.so"
    subprocess.run([r.args.gptc, r.args.model, "--precision=fp32", "--zero=1",
                    "-o", sharded], check=True)

    def train(name, art, batch, *extra):
        r.art = art
        try:
            run = r.run("--steps", str(STEPS), "--total-batch-tokens", str(batch),
                        "--log", "%s/%s.jsonl" % (r.work, name),
                        "--dump", "%s/%s" % (r.work, name), *val, *extra)
        finally:
            r.art = plain
        notes.append("%s %.1fs" % (name, run.seconds))
        return run

    train("plain-w2", plain, 512, "--procs", "2", "--ckpt-dir", r.work + "/plain-ckpt")
    train("zero-w2", sharded, 512, "--procs", "2", "--ckpt-dir", r.work + "/zero-ckpt")
    train("plain-w4", plain, 1024, "--procs", "4")
    train("zero-w4", sharded, 1024, "--procs", "4")
    # One worker: nothing to shard, the sharded kernels fall back to the
    # whole optimizer: the same computation as the plain artifact.
    train("plain-w1", plain, 512)
    train("zero-w1", sharded, 512)

    worst = {"loss": 0.0, "abs": 0.0, "l2": 0.0, "opt": 0.0}
    for ref, other in (("plain-w2", "zero-w2"), ("plain-w4", "zero-w4"),
                       ("plain-w1", "zero-w1")):
        a, b = log("%s/%s.jsonl" % (r.work, ref)), log("%s/%s.jsonl" % (r.work, other))
        if len(a) != STEPS or len(b) != STEPS:
            failures.append("%s/%s: expected %d log lines" % (ref, other, STEPS))
            continue
        exact = other == "zero-w1"
        compare_curves(a, b, ref, other, worst, failures, exact)
        compare_final(params(r.work + "/%s/final" % ref),
                      params(r.work + "/%s/final" % other), ref, other, worst,
                      failures, exact)

    # ZeRO-1 with FP8 gradients: each slice's owner sums the ranks' E4M3
    # codes in f32 and keeps the sums; the loss stays within 1% of f32's.
    sharded_fp8 = r.work + "/zero1-fp8.so"
    subprocess.run([r.args.gptc, r.args.model, "--precision=fp32", "--zero=1",
                    "--grad-comm", "fp8", "-o", sharded_fp8], check=True)
    train("zero-fp8-w2", sharded_fp8, 512, "--procs", "2")
    f32_loss = log(r.work + "/plain-w2.jsonl")[-1]["loss"]
    fp8_loss = log(r.work + "/zero-fp8-w2.jsonl")[-1]["loss"]
    fp8_gap = abs(fp8_loss - f32_loss) / f32_loss
    notes.append("ZeRO-1 with fp8 gradients: last loss %.5f vs f32 %.5f (%.3f%%)"
                 % (fp8_loss, f32_loss, 100 * fp8_gap))
    if not fp8_gap < 0.01 or fp8_loss == f32_loss:
        failures.append("ZeRO-1 with fp8 gradient communication: last loss %.6f "
                        "vs %.6f with f32, expected within 1%% and not equal"
                        % (fp8_loss, f32_loss))

    # The checkpoint of a sharded run holds the whole optimizer state, as a
    # plain run's does (rank 0 gathers every rank's moments).
    def arena(ckpt, name):
        step = sorted(e for e in os.listdir(ckpt) if e.startswith("step_"))[-1]
        return np.fromfile(os.path.join(ckpt, step, name + ".bin"), "<f4").astype(np.float64)
    m_plain, m_zero = arena(r.work + "/plain-ckpt", "optimizer"), arena(r.work + "/zero-ckpt", "optimizer")
    if m_plain.shape != m_zero.shape or not np.any(m_zero):
        failures.append("optimizer checkpoint: %s vs %s elements" % (m_plain.shape, m_zero.shape))
    else:
        worst["opt"] = np.linalg.norm(m_plain - m_zero) / np.linalg.norm(m_plain)
        if worst["opt"] > 1e-5:
            failures.append("optimizer moments in the checkpoints differ by %.3g "
                            "(relative L2)" % worst["opt"])

    # Resuming a sharded run from its step-4 checkpoint continues exactly.
    base = ["--total-batch-tokens", "512", "--procs", "2", "--steps", str(STEPS),
            "--decay", "constant"]
    r.art = sharded
    try:
        ckpt = r.work + "/zero-resume-ckpt"
        r.run(*base, "--ckpt-dir", ckpt, "--ckpt-every", "4", "--keep", "0",
              "--log", r.work + "/zero-straight.jsonl", "--dump", r.work + "/zero-straight")
        steps = sorted(e for e in os.listdir(ckpt) if e.startswith("step_"))
        shutil.rmtree(os.path.join(ckpt, steps[-1]))
        with open(os.path.join(ckpt, "latest"), "w") as f:
            f.write(steps[0] + "\n")
        r.run(*base, "--ckpt-dir", ckpt, "--resume", "--log", r.work + "/zero-resumed.jsonl",
              "--dump", r.work + "/zero-resumed")
    finally:
        r.art = plain
    straight, resumed = log(r.work + "/zero-straight.jsonl"), log(r.work + "/zero-resumed.jsonl")
    if [x["loss"] for x in straight[4:]] != [x["loss"] for x in resumed]:
        failures.append("ZeRO-1: losses after resuming at step 4 differ")
    pa, pb = params(r.work + "/zero-straight/final"), params(r.work + "/zero-resumed/final")
    if sorted(pa) != sorted(pb) or any(not np.array_equal(pa[n], pb[n]) for n in pa):
        failures.append("ZeRO-1: final parameters after resuming differ")

    summary = ("ZeRO-1 vs all-reduce with 2 and 4 workers over %d steps: losses/grad "
               "norms/val losses max rel diff %.3g, final parameters max abs %.3g, "
               "relative L2 %.3g, checkpointed moments relative L2 %.3g; 1 worker "
               "bit-identical; resume at step 4 bit-identical (%s)" % (
                   STEPS, worst["loss"], worst["abs"], worst["l2"], worst["opt"],
                   ", ".join(notes)))
    return failures, summary


def multinode(r):
    failures = []
    start = time.time()
    r.run("--steps", str(STEPS), "--total-batch-tokens", "512", "--procs", "2",
          "--log", r.work + "/procs.jsonl", "--dump", r.work + "/procs")
    port = free_port()
    # torchrun semantics: the same command on every node but --node-rank.
    common = ["--steps", str(STEPS), "--total-batch-tokens", "512", "--procs", "1",
              "--nodes", "2", "--master", "127.0.0.1:%d" % port,
              "--log", r.work + "/nodes.jsonl", "--dump", r.work + "/nodes"]
    nodes = [r.start(*common, "--node-rank", str(rank)) for rank in (1, 0)]
    outputs = [p.communicate(timeout=300) for p in nodes]
    for p, (out, err) in zip(nodes, outputs):
        if p.returncode != 0:
            failures.append("a node's gptrun exited %d: %s%s" % (p.returncode, out, err))
    if not failures:
        a, b = log(r.work + "/procs.jsonl"), log(r.work + "/nodes.jsonl")
        if [x["loss"] for x in a] != [x["loss"] for x in b] or len(a) != STEPS:
            failures.append("losses differ: %s vs %s" % (a, b))
        pa, pb = params(r.work + "/procs/final"), params(r.work + "/nodes/final")
        if sorted(pa) != sorted(pb) or any(not np.array_equal(pa[n], pb[n]) for n in pa):
            failures.append("final parameters of --nodes 2 and --procs 2 differ")
    equal_seconds = time.time() - start

    # Node 1's worker dies: node 0's rank 0 sees its connection close in the
    # next all-reduce, so node 0's launcher fails too, naming rank 0's error.
    port = free_port()
    common = ["--steps", "500", "--procs", "1", "--nodes", "2",
              "--master", "127.0.0.1:%d" % port, "--log", r.work + "/dying.jsonl"]
    node1 = r.start(*common, "--node-rank", "1")
    node0 = r.start(*common, "--node-rank", "0")
    try:
        wait_for_steps(r.work + "/dying.jsonl", 2, node0)
        victim = workers_of(node1.pid).get(1)
        if victim is None:
            failures.append("could not find rank 1's process")
        else:
            os.kill(victim, signal.SIGKILL)
            killed = time.time()
            _, err1 = node1.communicate(timeout=60)
            _, err0 = node0.communicate(timeout=60)
            seconds = time.time() - killed
            if node1.returncode == 0 or "rank 1 (node 1, local rank 0) was killed by signal 9" not in err1:
                failures.append("node 1 did not report its killed rank: %s" % err1)
            if node0.returncode == 0 or "rank 0" not in err0 or "Gloo" not in err0:
                failures.append("node 0 did not fail with rank 0's Gloo error: %s" % err0)
            if seconds > 30:
                failures.append("the nodes took %.1f s to stop" % seconds)
    finally:
        for p in (node0, node1):
            if p.poll() is None:
                p.kill()
                p.communicate()
    return failures, ("--nodes 2 x --procs 1 == --procs 2 bit for bit (%.1fs); a "
                      "dead worker on node 1 stopped both nodes" % equal_seconds)


def signal_rank1(run, log_path, steps, sig):
    """Sends `sig` to rank 1 of the launcher `run` once its log has `steps`
    lines; returns the finished run, its stderr and the seconds from the
    signal to gptrun's exit."""
    try:
        wait_for_steps(log_path, steps, run)
        os.kill(workers_of(run.pid).get(1), sig)
        sent = time.time()
        _, err = run.communicate(timeout=60)
        return run, err, time.time() - sent
    finally:
        if run.poll() is None:
            run.kill()
            run.communicate()


def fault(r):
    failures = []
    # A constant learning rate: the resumed run below continues the straight
    # one whatever step the kill lands on.
    base = ["--total-batch-tokens", "512", "--procs", "2", "--steps", "12",
            "--decay", "constant"]
    r.run(*base, "--log", r.work + "/straight.jsonl", "--dump", r.work + "/straight")

    ckpt = r.work + "/ckpt"
    run, err, seconds = signal_rank1(
        r.start(*base, "--ckpt-dir", ckpt, "--ckpt-every", "1",
                "--log", r.work + "/killed.jsonl"),
        r.work + "/killed.jsonl", 3, signal.SIGKILL)
    last = err.strip().splitlines()[-1] if err.strip() else ""
    if run.returncode == 0 or not last.startswith("gptrun: error: rank 1 was killed "
                                                  "by signal 9 (SIGKILL)"):
        failures.append("killing rank 1: exit %d, last line %r" % (run.returncode, last))
    if seconds > 15:
        failures.append("gptrun took %.1f s to stop after rank 1 died" % seconds)
    entries = sorted(os.listdir(ckpt))
    steps = [e for e in entries if e.startswith("step_")]
    if any(e.endswith(".tmp") for e in entries) or not steps:
        failures.append("checkpoint directory after the kill: %s" % entries)
    for step in steps:
        if not os.path.exists(os.path.join(ckpt, step, "checkpoint.pb")):
            failures.append("checkpoint %s is incomplete" % step)
    with open(os.path.join(ckpt, "latest")) as f:
        latest = f.read().strip()
    if latest != steps[-1]:
        failures.append("latest names %s, newest is %s" % (latest, steps[-1]))

    # Resuming on the same world size continues exactly.
    run = r.run(*base, "--resume", "--ckpt-dir", ckpt, "--log", r.work + "/resumed.jsonl",
                "--dump", r.work + "/resumed")
    first = int(latest.split("_")[1])
    straight, resumed = log(r.work + "/straight.jsonl"), log(r.work + "/resumed.jsonl")
    if [x["loss"] for x in straight[first:]] != [x["loss"] for x in resumed]:
        failures.append("losses after resuming at step %d differ" % first)
    pa, pb = params(r.work + "/straight/final"), params(r.work + "/resumed/final")
    if sorted(pa) != sorted(pb) or any(not np.array_equal(pa[n], pb[n]) for n in pa):
        failures.append("final parameters after resuming differ from the straight run")

    # Another world size is refused before any worker starts.
    run = r.run("--total-batch-tokens", "512", "--steps", "12", "--decay", "constant",
                "--resume", "--ckpt-dir", ckpt, check=False)
    if run.returncode == 0 or "was written by 2 worker(s), this run has 1" not in run.stderr:
        failures.append("a 2-worker checkpoint resumed on 1 worker: %s" % run.stderr)

    # A worker that stops answering (alive, holding its sockets) is caught
    # by the timeout: rank 0's all-reduce fails after --dist-timeout.
    run, err, stall_seconds = signal_rank1(
        r.start("--total-batch-tokens", "512", "--procs", "2", "--steps", "500",
                "--log", r.work + "/stalled.jsonl", timeout=3),
        r.work + "/stalled.jsonl", 2, signal.SIGSTOP)
    if run.returncode == 0 or "stalled for longer than the 3 s timeout" not in err:
        failures.append("a stalled worker: exit %d, %s" % (run.returncode, err))
    if stall_seconds > 20:
        failures.append("a stalled worker ended the run only after %.1f s" % stall_seconds)
    return failures, ("killed rank 1 -> exit in %.2fs naming it, checkpoints whole, "
                      "resume at step %d bit-identical, world-size change refused, "
                      "stalled rank -> exit in %.1fs (3 s timeout)" % (
                          seconds, first, stall_seconds))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("mode", choices=("equivalence", "zero", "multinode", "fault"))
    for flag in ("--gptc", "--gptrun", "--model", "--shards-script", "--work"):
        parser.add_argument(flag, required=True)
    args = parser.parse_args()
    runner = Runner(args, args.work)
    failures, summary = globals()[args.mode](runner)
    if failures:
        print("FAILED: " + "; ".join(failures))
        return 1
    print("PASSED: " + summary)
    return 0


if __name__ == "__main__":
    sys.exit(main())
