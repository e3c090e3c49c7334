"""Does each pass of the loop pay, and where: per-pass perplexity of a model folder on
training windows against validation (held-out) windows, on the CPU.

    python train/diagnose_passes.py --model models/dory-tiny [--windows 12] [--passes 6]
        [--decode 3,4] [--iters 2] [--splits val,train] [--bf16]

For each split: windows of 1,025 tokens from a <|bos|>, evenly spread over the split (the
sources lie one after another), then
- parallel semantics, the loop run for --passes passes (beyond the model's P if larger):
  perplexity after each pass, by quarter of the window, the read-out's entropy and top-1
  accuracy, the cosine between successive passes' read-out states and with the input
  embedding;
- the decode semantics with each pass count of --decode (after each of --iters
  iterations of its fixed point; with 1 pass it equals the parallel semantics).
Prints one JSON line per result, then all of them.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import sys
import time
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

sys.path.insert(0, str(Path(__file__).resolve().parent))
from dory import load, perplexity  # noqa: E402
from dory import tokens as token_files  # noqa: E402


def spread_windows(ids: np.ndarray, bos: int, length: int, n: int) -> torch.Tensor:
    starts = token_files.starts(ids, bos, length)
    pick = starts[np.unique(np.linspace(0, len(starts) - 1, n).round().astype(int))]
    return torch.from_numpy(np.stack([ids[s:s + length] for s in pick]))


@torch.no_grad()
def parallel(model, wins: torch.Tensor, passes: int, batch: int, autocast) -> dict:
    nll, ent, top1, cos_prev, cos_x = (np.zeros(passes) for _ in range(5))
    quarter = np.zeros((passes, 4))
    count = 0
    for b in range(0, len(wins), batch):
        w = wins[b:b + batch]
        x, y = w[:, :-1], w[:, 1:]
        with autocast():
            states, _ = model(x, passes=passes, readouts=True)
        xe = F.normalize(model.embed[x].float(), dim=-1)
        prev = None
        for k, s in enumerate(states):
            s = s.float()
            lp = model.logits(s).float().log_softmax(-1)
            tok = -lp.gather(-1, y[..., None])[..., 0]
            nll[k] += float(tok.sum())
            t = tok.shape[1]
            for q in range(4):
                quarter[k, q] += float(tok[:, q * t // 4:(q + 1) * t // 4].sum())
            ent[k] += float(-(lp.exp() * lp).sum())
            top1[k] += float((lp.argmax(-1) == y).sum())
            cos_x[k] += float((s * xe).sum())
            if prev is not None:
                cos_prev[k] += float((s * prev).sum())
            prev = s
        count += y.numel()
    return {"tokens": count,
            "ppl": [round(math.exp(v / count), 4) for v in nll],
            "ppl_by_quarter": [[round(math.exp(v / (count / 4)), 3) for v in row] for row in quarter],
            "entropy": [round(v / count, 4) for v in ent], "top1": [round(v / count, 4) for v in top1],
            "cos_prev_state": [None] + [round(v / count, 4) for v in cos_prev[1:]],
            "cos_input": [round(v / count, 4) for v in cos_x]}


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", type=Path, required=True)
    ap.add_argument("--data", type=Path, default=Path(__file__).resolve().parent / "data/carry",
                    help="folder with train.u16[.xz] and val.u16[.xz] in the model's tokenizer")
    ap.add_argument("--splits", default="val,train")
    ap.add_argument("--windows", type=int, default=12)
    ap.add_argument("--context", type=int, default=1025)
    ap.add_argument("--passes", type=int, default=0, help="parallel read-outs up to this pass (0: P)")
    ap.add_argument("--decode", default="", help="pass counts for the decode semantics, e.g. 3,4")
    ap.add_argument("--iters", type=int, default=2)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--bf16", action="store_true", help="bf16 autocast, as the GPU evaluations")
    ap.add_argument("--threads", type=int, default=1)
    a = ap.parse_args(argv)
    torch.set_num_threads(a.threads)
    model = load(a.model, torch.float32).eval()
    autocast = (lambda: torch.autocast("cpu", dtype=torch.bfloat16)) if a.bf16 else contextlib.nullcontext
    bos = model.cfg.bos
    out = {"model": str(a.model), "windows": a.windows}
    wins = {}
    for split in a.splits.split(","):
        path = next(p for p in (a.data / f"{split}.u16", a.data / f"{split}.u16.xz") if p.exists())
        wins[split] = spread_windows(token_files.read(path), bos, a.context, a.windows)
        t0 = time.time()
        r = parallel(model, wins[split], a.passes or model.cfg.passes, a.batch, autocast)
        r["seconds"] = round(time.time() - t0, 1)
        out[split] = {"parallel": r}
        print(json.dumps({"split": split, "parallel": r}), flush=True)
    for split in a.splits.split(","):
        if not a.decode:
            break
        t0 = time.time()
        d = {p: [round(v, 4) for v in perplexity.decode_semantics(
            model, wins[split], a.batch, torch.device("cpu"), p, a.iters, torch.bfloat16 if a.bf16 else None)]
             for p in map(int, a.decode.split(","))}
        out[split]["decode"] = d
        print(json.dumps({"split": split, "decode": d, "seconds": round(time.time() - t0, 1)}), flush=True)
    print(json.dumps(out))
    return out


if __name__ == "__main__":
    main()
