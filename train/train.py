"""Trains a Dory with the nGPT recipe; the same script on one GPU, many (torchrun), or the CPU.

    python train/train.py --config train/configs/dory-tiny.json --data train/data --out train/runs/tiny
    torchrun --nproc_per_node 8 train/train.py …        # DDP over NCCL (gloo on the CPU)

The recipe: every weight matrix renormalised along the embedding dimension after every
optimiser step; learnable vectors with nGPT's re-parametrisation (model.py); Adam with no
weight decay; bf16 autocast on CUDA; linear warm-up, then WSD (constant, then a linear
decay over the last --decay fraction) or cosine. Each batch runs a random number of passes
drawn from --pass-weights (so every exit point is trained), with optional losses on the
intermediate read-outs (--readout-loss) and a penalty on any pass that does not beat the one
before it (--mono-loss); batches may run more passes than the model is run for
(--train-passes), so that its read-outs still improve at pass P; --decode-frac of the batches train in the decode
regime (the other positions' keys and values from the final pass of a no-grad forward,
the token's own from the current pass: what decoding sees, spec §5).

Progress is max(step / --steps, elapsed / --time-budget); --stop-at ends a run early at a
given progress (a checkpoint to branch from). Checkpoints: OUT/ckpt.pt (every
--ckpt-every steps and at the end); --resume continues from it. Log: OUT/log.jsonl.
At the end, unless --no-export: validation perplexity per pass and in the decode
semantics (OUT/eval.json) and the exported model folder OUT/model.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import shutil
import sys
import time
from pathlib import Path

import numpy as np
import torch
import torch._dynamo
import torch.distributed as dist
import torch.nn.functional as F

sys.path.insert(0, str(Path(__file__).resolve().parent))
from dory import Config, Dory, perplexity, save  # noqa: E402
from dory import tokens as token_files  # noqa: E402
from dory.flops import H200_BF16_PEAK, train_step_per_token  # noqa: E402
from dory.model import init_weights, renormalize  # noqa: E402


def parse(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--config", type=Path, required=True, help="model config.json (spec §2)")
    ap.add_argument("--data", type=Path, required=True, help="folder with train/val token files and tokenizer.json")
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--seq", type=int, default=1024, help="tokens per training window")
    ap.add_argument("--batch", type=int, default=64, help="windows per step per process")
    ap.add_argument("--lr", type=float, default=2e-3)
    ap.add_argument("--betas", type=float, nargs=2, default=(0.9, 0.95))
    ap.add_argument("--warmup", type=int, default=100, help="warm-up steps")
    ap.add_argument("--schedule", choices=["wsd", "cosine"], default="wsd")
    ap.add_argument("--decay", type=float, default=0.2, help="WSD: fraction of progress spent decaying")
    ap.add_argument("--steps", type=int, default=0, help="total steps (0: time budget only)")
    ap.add_argument("--time-budget", type=float, default=0, help="seconds of training (0: steps only)")
    ap.add_argument("--stop-at", type=float, default=1.0, help="end the run at this progress")
    ap.add_argument("--max-steps", type=int, default=0,
                    help="end the run at this step, the schedule unchanged (0: no such end; equal-token "
                         "trial runs that a --resume may continue)")
    ap.add_argument("--pass-weights", type=str, default=None,
                    help="relative odds of running 1..P passes in a batch "
                         "(default 1,1,2,4,…: doubling towards P from pass 2)")
    ap.add_argument("--readout-loss", type=float, default=0.0,
                    help="weight of each intermediate read-out's loss")
    ap.add_argument("--train-passes", type=int, default=0,
                    help="most passes a training batch runs (0: the config's P); more than P trains "
                         "the loop beyond the passes it is run for, so that the read-outs keep "
                         "improving up to pass P (--pass-weights then has this many entries)")
    ap.add_argument("--mono-loss", type=float, default=0.0,
                    help="weight of the monotonicity penalty: in a batch of k > 1 passes with "
                         "read-outs, Σ_j relu(L_j − L_(j−1) + --mono-margin) over its passes j = 2..k "
                         "(L_j the mean cross-entropy of pass j's read-out): every pass must "
                         "pay by the margin")
    ap.add_argument("--mono-margin", type=float, default=0.01,
                    help="nats by which each pass's loss should fall below the previous pass's")
    ap.add_argument("--decode-frac", type=float, default=0.0, help="fraction of batches in the decode regime")
    ap.add_argument("--decode-iters", type=int, default=1, help="no-grad forwards that give the decode regime its keys")
    ap.add_argument("--dropout", type=float, default=0.0,
                    help="dropout on the sub-layers' outputs (training only)")
    ap.add_argument("--clip", type=float, default=1.0, help="gradient-norm clip (0: none)")
    ap.add_argument("--compile", action="store_true", help="torch.compile the layers")
    ap.add_argument("--seed", type=int, default=1234)
    ap.add_argument("--log-every", type=int, default=20)
    ap.add_argument("--eval-every", type=int, default=0, help="steps between validation runs (0: at the end)")
    ap.add_argument("--eval-windows", type=int, default=0,
                    help="validation windows of the evaluations during training (0: all)")
    ap.add_argument("--decode-eval-iters", type=int, default=4)
    ap.add_argument("--heldout", type=Path, default=None,
                    help="token file of the held-out text (bench/heldout.py's text, tokenized), scored at the "
                         "end as `dory ppl` windows it (default: DATA/heldout.u16[.xz] if present; 'none': skip)")
    ap.add_argument("--ckpt-every", type=int, default=500)
    ap.add_argument("--resume", action="store_true")
    ap.add_argument("--no-export", action="store_true", help="no final evaluation and no model folder")
    ap.add_argument("--no-model", action="store_true", help="the final evaluation, but no model folder")
    ap.add_argument("--final-windows", type=int, default=0,
                    help="validation windows of the final evaluation (0: all)")
    ap.add_argument("--heldout-tokens", type=int, default=0,
                    help="score only the first N tokens of the held-out text (0: all), as dory ppl --tokens")
    ap.add_argument("--export-dtype", choices=["bf16", "f16", "f32"], default="bf16")
    ap.add_argument("--shard-mb", type=float, default=0, help="export as shards of at most this many MB")
    ap.add_argument("--device", default=None)
    ap.add_argument("--check", action="store_true",
                    help="first compare this device's forward with a float64 CPU forward")
    ap.add_argument("--bench-steps", type=int, default=0,
                    help="first time this many forward+backward steps at 1 and at P passes")
    a = ap.parse_args(argv)
    if not a.steps and not a.time_budget:
        ap.error("give --steps, --time-budget or both")
    if a.train_passes < 0 or a.mono_loss < 0:
        ap.error("--train-passes and --mono-loss must be ≥ 0")
    return a


class Batches:
    """Training windows drawn on the device: seq + 1 tokens from a random <|bos|>."""

    def __init__(self, ids: np.ndarray, bos: int, seq: int, batch: int, device, seed: int):
        self.starts = torch.from_numpy(token_files.starts(ids, bos, seq + 1)).to(device)
        if len(self.starts) == 0:
            raise SystemExit(f"no training window of {seq + 1} tokens starts at a bos")
        self.ids = torch.from_numpy(ids.astype(np.int32)).to(device)
        self.offsets = torch.arange(seq + 1, device=device)
        self.batch = batch
        self.gen = torch.Generator(device=device).manual_seed(seed)

    def next(self):
        pick = torch.randint(len(self.starts), (self.batch,), generator=self.gen, device=self.starts.device)
        w = self.ids[self.starts[pick][:, None] + self.offsets].long()
        return w[:, :-1], w[:, 1:]


def progress(a, step: int, elapsed: float) -> float:
    p = 0.0
    if a.steps:
        p = max(p, step / a.steps)
    if a.time_budget:
        p = max(p, elapsed / a.time_budget)
    return p


def learning_rate(a, step: int, prog: float) -> float:
    warm = min(1.0, (step + 1) / max(1, a.warmup))
    if a.schedule == "cosine":
        return a.lr * warm * 0.5 * (1 + math.cos(math.pi * min(1.0, prog)))
    start = 1.0 - a.decay
    if prog <= start:
        return a.lr * warm
    return a.lr * warm * max(0.0, (1.0 - prog) / a.decay)


def step_plan(a, step: int, passes: int) -> tuple[int, bool]:
    """The passes and the regime of a step: a function of (seed, step) alone, so every
    process of a DDP run draws the same and a resumed run the same as an unbroken one."""
    if a.pass_weights is None:
        weights = [2.0 ** max(0, k - 2) for k in range(1, passes + 1)]
    else:
        weights = [float(w) for w in a.pass_weights.split(",")]
    if len(weights) != passes:
        raise SystemExit(f"--pass-weights has {len(weights)} entries; training runs up to {passes} passes "
                         "(the config's P, or --train-passes)")
    r = random.Random(a.seed * 1_000_003 + step)
    p = r.choices(range(1, passes + 1), weights=weights)[0]
    return p, r.random() < a.decode_frac


def ce(model, state, targets) -> torch.Tensor:
    return F.cross_entropy(model.logits(state).float().flatten(0, 1), targets.flatten())


def combine(a, per_pass: list[torch.Tensor]) -> torch.Tensor:
    """A batch's loss from the mean cross-entropy of each pass's read-out (the last is the
    batch's final pass; with neither read-out loss nor monotonicity penalty, only it):
    the final loss and --readout-loss × each intermediate one, normalised by the weights'
    sum; plus --mono-loss × Σ_j relu(L_j − L_(j−1) + --mono-margin), which is zero while
    every pass beats the one before it by the margin and otherwise pushes the later pass
    down and the earlier one up (both sides carry the gradient: the loop's shared weights
    must make the difference, not only lower one read-out)."""
    final = per_pass[-1]
    k = len(per_pass)
    loss = final
    if a.readout_loss > 0 and k > 1:
        loss = (final + a.readout_loss * sum(per_pass[:-1])) / (1 + a.readout_loss * (k - 1))
    if a.mono_loss > 0 and k > 1:
        loss = loss + a.mono_loss * sum(F.relu(per_pass[j] - per_pass[j - 1] + a.mono_margin)
                                        for j in range(1, k))
    return loss


def main(argv=None) -> dict:
    a = parse(argv)
    world = int(os.environ.get("WORLD_SIZE", "1"))
    rank = int(os.environ.get("RANK", "0"))
    local = int(os.environ.get("LOCAL_RANK", "0"))
    cuda = torch.cuda.is_available() and a.device != "cpu"
    device = torch.device(a.device or (f"cuda:{local}" if cuda else "cpu"))
    if world > 1:
        dist.init_process_group("nccl" if cuda else "gloo")
    if cuda:
        torch.cuda.set_device(device)
        torch.backends.cuda.matmul.allow_tf32 = True
        torch.backends.cudnn.allow_tf32 = True
    main_proc = rank == 0
    a.out.mkdir(parents=True, exist_ok=True)

    cfg = Config.load(a.config)
    data = load_split(a.data, "train")
    val = load_split(a.data, "val")
    bos = cfg.bos
    if bos is None:
        raise SystemExit(f"{a.config}: training windows start at bos_token_id; the config has none")

    torch.manual_seed(a.seed)
    model = Dory(cfg, reparam=True)
    init_weights(model, torch.Generator().manual_seed(a.seed))
    model.to(device)
    for m in model.modules():
        if hasattr(m, "dropout"):
            m.dropout = a.dropout
    opt = torch.optim.Adam(model.parameters(), lr=a.lr, betas=tuple(a.betas), eps=1e-8,
                           weight_decay=0.0, fused=cuda)
    batches = Batches(data, bos, a.seq, a.batch, device, a.seed + 7919 * rank)
    step, elapsed, seen = 0, 0.0, 0
    ckpt = a.out / "ckpt.pt"
    if a.resume and ckpt.exists():
        state = torch.load(ckpt, map_location=device, weights_only=False)
        model.load_state_dict(state["model"])
        opt.load_state_dict(state["opt"])
        step, elapsed, seen = state["step"], state["elapsed"], state["tokens"]
        batches.gen.set_state(state["batches"][rank % len(state["batches"])].cpu())
        log(a, main_proc, {"event": "resume", "step": step, "tokens": seen})

    fns = None
    if a.compile:
        # One code object (Layer.forward) serves every layer and regime: raise the limit
        # of compiled variants so none falls back to eager.
        torch._dynamo.config.cache_size_limit = 64
        torch._dynamo.config.accumulated_cache_size_limit = 1024
        # A layer that fails to compile runs eagerly (and says so in the log) rather
        # than ending a run that a device lease pays for.
        torch._dynamo.config.suppress_errors = True
        fns = [torch.compile(layer) for layer in model.layers]
    net = torch.nn.parallel.DistributedDataParallel(model, device_ids=[local] if cuda else None) \
        if world > 1 else model
    amp = torch.autocast("cuda", dtype=torch.bfloat16) if cuda else torch.autocast("cpu", enabled=False)

    if a.check and main_proc:
        log(a, main_proc, check_device(model, batches, device))
    if a.bench_steps and world == 1:
        for p in sorted({1, cfg.passes}):
            log(a, main_proc, benchmark(a, model, fns, batches, amp, p, device))
    log(a, main_proc, {"event": "start", "params": sum(p.numel() for p in model.parameters()),
                       "world": world, "backend": dist.get_backend() if world > 1 else None,
                       "device": str(device), "tokens_per_step": a.batch * a.seq * world,
                       "args": {k: str(v) for k, v in vars(a).items()}})
    window_flops, window_tokens, window_start = 0.0, 0, time.perf_counter()
    first_loss = last_loss = None
    t_last = time.perf_counter()
    while True:
        prog = progress(a, step, elapsed)
        if prog >= min(1.0, a.stop_at) or (a.max_steps and step >= a.max_steps):
            break
        lr = learning_rate(a, step, prog)
        for g in opt.param_groups:
            g["lr"] = lr
        passes, decode = step_plan(a, step, a.train_passes or cfg.passes)
        x, y = batches.next()
        with amp:
            kv = None
            if decode:
                with torch.no_grad():
                    _, kv = model(x, passes=passes, layer_fns=fns)
                    for _ in range(a.decode_iters - 1):
                        _, kv = model(x, passes=passes, final_kv=kv, layer_fns=fns)
            readouts = a.readout_loss > 0 or a.mono_loss > 0
            states, _ = net(x, passes=passes, readouts=readouts, final_kv=kv, layer_fns=fns)
            per_pass = [ce(model, s, y) for s in states] if readouts else [ce(model, states[-1], y)]
            final = per_pass[-1]
            loss = combine(a, per_pass)
        loss.backward()
        if a.clip > 0:
            torch.nn.utils.clip_grad_norm_(model.parameters(), a.clip)
        opt.step()
        opt.zero_grad(set_to_none=True)
        renormalize(model)
        step += 1
        seen += a.batch * a.seq * world
        window_tokens += a.batch * a.seq * world
        readouts = passes if a.readout_loss > 0 or a.mono_loss > 0 else 1
        window_flops += a.batch * a.seq * world * train_step_per_token(
            cfg, a.seq, passes, readouts, a.decode_iters if decode else 0)
        if first_loss is None:
            first_loss = float(final.detach())
        if step % a.log_every == 0 or (a.max_steps and step >= a.max_steps):
            last_loss = float(final.detach())
        now = time.perf_counter()
        elapsed += now - t_last
        t_last = now
        if step % a.log_every == 0 or step == 1:
            sync(device)
            now = time.perf_counter()
            dt = now - window_start
            log(a, main_proc, {"step": step, "loss": round(float(final.detach()), 4), "lr": lr, "passes": passes,
                               "decode": decode, "progress": round(prog, 4), "elapsed": round(elapsed, 1),
                               "tokens": seen, "tok_s": round(window_tokens / dt),
                               "tok_s_gpu": round(window_tokens / dt / world),
                               "mfu": round(window_flops / dt / world / H200_BF16_PEAK, 4) if cuda else None})
            window_flops, window_tokens, window_start = 0.0, 0, time.perf_counter()
            t_last = window_start
        if a.eval_every and step % a.eval_every == 0 and main_proc:
            log(a, main_proc, {"step": step, **evaluate(a, model, val, bos, device, amp, decode=False)})
            t_last = time.perf_counter()
        if step % a.ckpt_every == 0:
            save_ckpt(a, main_proc, model, opt, step, elapsed, seen, batches, world)
            t_last = time.perf_counter()

    save_ckpt(a, main_proc, model, opt, step, elapsed, seen, batches, world)
    result = {"steps": step, "tokens": seen, "elapsed": round(elapsed, 1), "first_loss": first_loss,
              "last_loss": None if last_loss is None else round(last_loss, 4)}
    if main_proc and not a.no_export:
        result.update(evaluate(a, model, val, bos, device, amp, decode=True))
        if not a.no_model:
            export(a, model)
        (a.out / "eval.json").write_text(json.dumps(result, indent=2) + "\n")
    log(a, main_proc, {"event": "end", **result})
    if world > 1:
        # Both ranks leave together: a rank whose peer had already torn gloo down hung at
        # exit in about one run in eight (the CPU test, under a loaded machine).
        dist.barrier()
        dist.destroy_process_group()
    return result


def check_device(model, batches, device) -> dict:
    """Relative error of this device's logits against float64 on the CPU, for two
    windows: in float32 (TF32 off), and under the training's bf16 autocast."""
    x = batches.next()[0][:2]
    model.eval()  # no dropout in the comparison
    ref = Dory(model.cfg, reparam=True)
    ref.load_state_dict(model.state_dict())
    ref = ref.double()
    with torch.no_grad():
        want = ref.logits(ref(x.cpu())[0][-1])
        tf32 = torch.backends.cuda.matmul.allow_tf32
        torch.backends.cuda.matmul.allow_tf32 = False
        got32 = model.logits(model(x)[0][-1]).double().cpu()
        torch.backends.cuda.matmul.allow_tf32 = tf32
        with torch.autocast(device.type, dtype=torch.bfloat16, enabled=device.type == "cuda"):
            got16 = model.logits(model(x)[0][-1]).double().cpu()
    model.train()
    err = lambda g: float((g - want).norm() / want.norm())  # noqa: E731
    return {"event": "check", "rel_err_f32": err(got32), "rel_err_bf16_autocast": err(got16)}


def benchmark(a, model, fns, batches, amp, passes: int, device) -> dict:
    """Tokens/s and MFU of training steps (forward, backward) at a fixed pass count;
    the first steps also compile, so they are run and dropped before timing."""
    def one():
        x, y = batches.next()
        with amp:
            states, _ = model(x, passes=passes, layer_fns=fns)
            loss = ce(model, states[-1], y)
        loss.backward()
        model.zero_grad(set_to_none=True)

    t0 = time.perf_counter()
    for _ in range(3):
        one()
    sync(device)
    warm = time.perf_counter() - t0
    t0 = time.perf_counter()
    for _ in range(a.bench_steps):
        one()
    sync(device)
    dt = time.perf_counter() - t0
    tokens = a.bench_steps * a.batch * a.seq
    flops = tokens * train_step_per_token(model.cfg, a.seq, passes, 1)
    return {"event": "bench", "passes": passes, "warmup_s": round(warm, 1), "tok_s": round(tokens / dt),
            "mfu": round(flops / dt / H200_BF16_PEAK, 4) if device.type == "cuda" else None,
            "step_ms": round(1000 * dt / a.bench_steps, 1)}


def sync(device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize()


def load_split(folder: Path, split: str) -> np.ndarray:
    for name in (f"{split}.u16", f"{split}.u16.xz"):
        if (folder / name).exists():
            return token_files.read(folder / name)
    raise SystemExit(f"{folder}: no {split}.u16 or {split}.u16.xz (run train/data.py build)")


def evaluate(a, model, val, bos, device, amp, decode: bool) -> dict:
    """Validation perplexity and bits per byte per pass (all windows at the end,
    --eval-windows during training) and, at the end, in the decode semantics; at the end
    also on the held-out text as `dory ppl` windows it (--heldout)."""
    wins = perplexity.windows(val, bos, a.seq + 1)
    limit = a.final_windows if decode else a.eval_windows
    if limit and limit < len(wins):
        # Evenly spread over the split, so that every source's held-out passages count
        # (the split lays the sources out one after another).
        wins = wins[np.unique(np.linspace(0, len(wins) - 1, limit).round().astype(int))]
    dtype = torch.bfloat16 if device.type == "cuda" else None
    nbytes = token_bytes(a, model.cfg.vocab_size)
    model.eval()
    out = {"val_windows": len(wins)}
    if nbytes is None:
        out["val_ppl_per_pass"] = [round(p, 3) for p in perplexity.per_pass(model, wins, a.batch, device, dtype)]
        if decode:
            out["val_ppl_decode"] = {
                p: [round(x, 3) for x in perplexity.decode_semantics(model, wins, a.batch, device, p,
                                                                      a.decode_eval_iters, dtype)]
                for p in range(1, model.cfg.passes + 1)}
    else:
        r = perplexity.score(model, [wins], a.batch, device, nbytes, a.decode_eval_iters, dtype, decode)
        out.update({"val_tokens": r["tokens"], "val_bytes": r["bytes"],
                    "val_ppl_per_pass": r["ppl_per_pass"], "val_bpb_per_pass": r["bpb_per_pass"]})
        if decode:
            out.update({"val_ppl_decode": r["ppl_decode"], "val_bpb_decode": r["bpb_decode"]})
        path, held = heldout_ids(a) if decode else (None, None)
        if held is not None:
            h = perplexity.score(model, perplexity.text_windows(held, bos, a.seq + 1), a.batch, device,
                                 nbytes, a.decode_eval_iters, dtype)
            out["heldout"] = {"file": str(path), **h}
    if a.train_passes > model.cfg.passes:
        # Where the loop's best read-out lies when it is trained beyond P: parallel
        # semantics, passes 1..--train-passes (the first P as val_ppl_per_pass).
        out["val_ppl_train_passes"] = [round(p, 4) for p in perplexity.per_pass(
            model, wins, a.batch, device, dtype, passes=a.train_passes)]
    model.train()
    return out


def token_bytes(a, vocab_size: int):
    """Byte lengths of the token ids (for bits per byte), or None without a byte-level
    tokenizer.json beside the data."""
    try:
        return perplexity.token_bytes(a.data / "tokenizer.json", vocab_size)
    except (FileNotFoundError, ValueError, KeyError):
        return None


def heldout_ids(a):
    """(path, ids) of the held-out text, tokenized (--heldout, else DATA/heldout.u16[.xz]);
    (None, None) when there is none."""
    if a.heldout is not None:
        if str(a.heldout) == "none":
            return None, None
        ids = token_files.read(a.heldout)
        return a.heldout, ids[:a.heldout_tokens] if a.heldout_tokens else ids
    for name in ("heldout.u16", "heldout.u16.xz"):
        if (a.data / name).exists():
            ids = token_files.read(a.data / name)
            return a.data / name, ids[:a.heldout_tokens] if a.heldout_tokens else ids
    return None, None


def save_ckpt(a, main_proc, model, opt, step, elapsed, seen, batches, world) -> None:
    states = [batches.gen.get_state()]
    if world > 1:
        gathered = [None] * world
        dist.all_gather_object(gathered, batches.gen.get_state().cpu())
        states = gathered
    if not main_proc:
        return
    tmp = a.out / "ckpt.pt.tmp"
    torch.save({"model": model.state_dict(), "opt": opt.state_dict(), "step": step, "elapsed": elapsed,
                "tokens": seen, "config": model.cfg.to_dict(), "batches": states}, tmp)
    tmp.replace(a.out / "ckpt.pt")


def export(a, model: Dory) -> None:
    folder = a.out / "model"
    shard = int(a.shard_mb * 1e6) if a.shard_mb else None
    save(model, folder, a.export_dtype, shard)
    tok = a.data / "tokenizer.json"
    if tok.exists():
        shutil.copy(tok, folder / "tokenizer.json")


def log(a, main_proc: bool, record: dict) -> None:
    if not main_proc:
        return
    line = json.dumps(record)
    print(line, flush=True)
    with open(a.out / "log.jsonl", "a") as f:
        f.write(line + "\n")


if __name__ == "__main__":
    main()
