"""Text from a model folder through the step-wise Session (the decode semantics the engine
runs), on the CPU: a reference for `dory generate` and a look at what a model writes.

    python train/generate.py --model models/dory-tiny "Once upon a time" --max-tokens 80
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from dory import Session, load  # noqa: E402
from dory import tokenizer as toks  # noqa: E402


def generate(model, tok, prompt: str, max_tokens: int, temperature: float = 0.0,
             top_k: int = 0, seed: int = 0, attention: str = "exact"):
    """Returns (text, ids, per-step logits, passes). Greedy at temperature 0 (ties to the
    lowest id, as torch.argmax picks the first maximum)."""
    session = Session(model, attention=attention)
    ids = toks.encode(tok, prompt)
    logits = session.prompt(ids, bos=True)[-1]
    gen = torch.Generator().manual_seed(seed)
    out, rows, used = [], [], []
    for _ in range(max_tokens):
        rows.append(logits)
        if temperature == 0:
            t = int(torch.argmax(logits))
        else:
            z = logits.double() / temperature
            if top_k:
                z[z < torch.topk(z, top_k).values[-1]] = -float("inf")
            t = int(torch.multinomial(torch.softmax(z, -1), 1, generator=gen))
        out.append(t)
        if t in model.cfg.eos_ids:
            break
        logits, passes = session.step(t)
        used.append(passes)
    return toks.decode(tok, out), out, torch.stack(rows), used


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("prompt")
    ap.add_argument("--model", type=Path, default=Path(__file__).resolve().parent.parent / "models/dory-tiny")
    ap.add_argument("--max-tokens", type=int, default=64)
    ap.add_argument("--temperature", type=float, default=0.0)
    ap.add_argument("--top-k", type=int, default=0)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--o1", action="store_true", help="full layers in O(1) mode")
    ap.add_argument("--dtype", choices=["f32", "f64"], default="f32")
    a = ap.parse_args(argv)
    model = load(a.model, torch.float64 if a.dtype == "f64" else torch.float32)
    tok = toks.load(a.model)
    text, _, _, _ = generate(model, tok, a.prompt, a.max_tokens, a.temperature, a.top_k, a.seed,
                             "o1" if a.o1 else "exact")
    print(a.prompt + text)


if __name__ == "__main__":
    main()
