"""Tunes the early-exit rule of a model on validation text, in the decode semantics.

    python train/tune_exit.py --model models/dory-tiny --data train/data --windows 6

For every rule of the sweep: perplexity and bits per byte with every token decoded step by
step (the batched fixed point of perplexity.decode_with_exit) and the mean passes per token,
on --windows validation windows spread over the split; the
tuned rule is the one that saves the most passes within --budget (default 1 %) of the
perplexity without early exit.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from dory import Exit, load, perplexity  # noqa: E402
from train import load_split  # noqa: E402

SWEEP = "kl:1,kl:0.3,kl:0.1,kl:0.05,kl:0.03,kl:0.01,confidence:0.3,confidence:0.5,confidence:0.7," \
        "confidence:0.9,confidence:0.5:2,confidence:0.7:2"


def parse_rules(text: str) -> list[tuple[str, float, int]]:
    """"kl:0.1,confidence:0.5:2" (criterion:threshold[:min_passes], as `dory --exit`)."""
    rules = []
    for item in text.split(","):
        parts = item.split(":")
        if len(parts) not in (2, 3) or parts[0] not in ("kl", "confidence"):
            raise SystemExit(f"--rules: {item!r} is not criterion:threshold[:min_passes]")
        rules.append((parts[0], float(parts[1]), int(parts[2]) if len(parts) == 3 else 1))
    return rules


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", type=Path, required=True)
    ap.add_argument("--data", type=Path, required=True, help="folder with val.u16 (or val.u16.xz)")
    ap.add_argument("--windows", type=int, default=6)
    ap.add_argument("--seq", type=int, default=1024)
    ap.add_argument("--iterations", type=int, default=2)
    ap.add_argument("--budget", type=float, default=0.01)
    ap.add_argument("--rules", default=SWEEP, help="the sweep, criterion:threshold[:min_passes],…")
    a = ap.parse_args(argv)
    model = load(a.model, torch.float32)
    cfg = model.cfg
    wins = perplexity.windows(load_split(a.data, "val"), cfg.bos, a.seq + 1)
    if a.windows and a.windows < len(wins):  # spread over the split, so every source counts
        wins = wins[np.unique(np.linspace(0, len(wins) - 1, a.windows).round().astype(int))]
    nbytes = perplexity.target_bytes(wins, perplexity.token_bytes(a.model / "tokenizer.json", cfg.vocab_size))
    count = wins[:, 1:].numel()
    cpu = torch.device("cpu")
    rows = []
    for crit, tau, k in [("none", 0.0, 1)] + parse_rules(a.rules):
        t0 = time.time()
        ppl, passes = perplexity.decode_with_exit(model, wins, 4, cpu, Exit(crit, tau, k), a.iterations)
        rows.append({"criterion": crit, "threshold": tau, "min_passes": k, "ppl": round(ppl, 3),
                     "bpb": round(perplexity.bits_per_byte(count * math.log(ppl), nbytes), 5),
                     "passes": round(passes, 3)})
        print(json.dumps({**rows[-1], "seconds": round(time.time() - t0, 1)}), flush=True)
    base = rows[0]["ppl"]
    ok = [r for r in rows[1:] if r["ppl"] <= base * (1 + a.budget)]
    best = min(ok, key=lambda r: r["passes"]) if ok else None
    print(json.dumps({"windows": len(wins), "tokens": int(count), "bytes": nbytes, "no_exit_ppl": base,
                      "tuned": best}))


if __name__ == "__main__":
    main()
