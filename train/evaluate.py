"""Perplexity and bits per byte of a model folder on a text, per pass (parallel semantics)
and in the decode semantics, windowed as `dory ppl` windows a file (each window <|bos|> and
then up to --context − 1 tokens; every token of the text scored once).

    python train/evaluate.py --model models/dory-tiny --text train/data/heldout.txt
    python train/evaluate.py --model DIR --ids train/data/carry/heldout.u16.xz   # pre-tokenized

The text is tokenized with the folder's tokenizer.json, so models with different
tokenizers score the same text, and bits per byte compare (bpb = Σ −ln p / (ln 2 · B), B
the UTF-8 bytes of the scored tokens, specials 0: here the bytes of the text).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from dory import load, perplexity  # noqa: E402
from dory import tokens as token_files  # noqa: E402


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", type=Path, required=True)
    src = ap.add_mutually_exclusive_group(required=True)
    src.add_argument("--text", type=Path, help="a UTF-8 text file (tokenized with the model's tokenizer)")
    src.add_argument("--ids", type=Path, help="a token file (.u16 or .u16.xz) in the model's tokenizer")
    ap.add_argument("--context", type=int, default=1025, help="tokens per window, bos included")
    ap.add_argument("--tokens", type=int, default=0, help="score only the first N tokens (0: all)")
    ap.add_argument("--iters", type=int, default=4, help="iterations of the decode semantics' fixed point")
    ap.add_argument("--no-decode", action="store_true", help="per pass only")
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--device", default=None)
    ap.add_argument("--out", type=Path, default=None, help="also write the result here (JSON)")
    a = ap.parse_args(argv)
    device = torch.device(a.device or ("cuda" if torch.cuda.is_available() else "cpu"))
    model = load(a.model, torch.float32).to(device).eval()
    if a.text:
        from dory import tokenizer as toks
        ids = np.array(toks.encode(toks.load(a.model), a.text.read_text()), dtype=np.int64)
    else:
        ids = token_files.read(a.ids)
    if a.tokens:
        ids = ids[:a.tokens]
    nbytes = perplexity.token_bytes(a.model / "tokenizer.json", model.cfg.vocab_size)
    dtype = torch.bfloat16 if device.type == "cuda" else None
    t0 = time.perf_counter()
    r = perplexity.score(model, perplexity.text_windows(ids, model.cfg.bos, a.context), a.batch, device,
                         nbytes, a.iters, dtype, decode=not a.no_decode)
    out = {"model": str(a.model), "file": str(a.text or a.ids), "context": a.context, **r,
           "seconds": round(time.perf_counter() - t0, 1)}
    print(json.dumps(out))
    if a.out:
        a.out.write_text(json.dumps(out, indent=2) + "\n")
    return out


if __name__ == "__main__":
    main()
