"""Held-out text for perplexity and bits-per-byte benchmarks: the validation split that
train/data.py built (passages the tokenizer and the model never trained on), decoded back to
text. The one source of held-out text: `train/data.py build` also writes it, as
train/data/heldout.txt and, tokenized, carry/heldout.u16.xz (what train.py scores).

Usage: python bench/heldout.py OUT.txt [--data train/data] [--sources shakespeare,milton,kjv,brown] [--every N]
(needs `python train/data.py fetch && build` first, or --data train/data/carry; --sources
keeps those sources' passages, e.g. the four of dory-tiny v1, whose held-out passages are the
same; --every N keeps every N-th passage, from the first: a short sample spread over every
source, e.g. for `dory ppl --decode` sweeps, whose first tokens all come from one source.)
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent


def val_ids(data: Path, sources: list[str] | None = None) -> np.ndarray:
    """The validation token stream, or the part of it from the given sources (the split
    lays each source's passages out together, in meta.json's order)."""
    raw = (data / "val.u16").read_bytes() if (data / "val.u16").exists() else None
    if raw is None:
        import lzma
        raw = lzma.decompress((data / "val.u16.xz").read_bytes())
    ids = np.frombuffer(raw, dtype="<u2")
    if not sources:
        return ids
    meta = json.loads((data / "meta.json").read_text())
    parts, at = [], 0
    for name, src in meta["sources"].items():
        n = src["val"]["tokens"]
        if name in sources:
            parts.append(ids[at:at + n])
        at += n
    unknown = set(sources) - set(meta["sources"])
    if unknown:
        raise SystemExit(f"unknown sources {sorted(unknown)}; known: {list(meta['sources'])}")
    return np.concatenate(parts)


def heldout_text(data: Path, sources: list[str] | None = None, every: int = 1) -> tuple[str, int, int]:
    """(text, passages, tokens): the held-out passages decoded, blank-line separated (every
    `every`-th passage, from the first; tokens counts the passages kept)."""
    from tokenizers import Tokenizer

    ids = val_ids(data, sources)
    tok = Tokenizer.from_file(str(data / "tokenizer.json"))
    # Passages are stored as <|bos|> text <|eos|>: split at bos, drop the special tokens.
    bos = tok.token_to_id("<|bos|>")
    cuts = np.flatnonzero(ids == bos).tolist() + [len(ids)]
    spans = list(zip(cuts, cuts[1:]))[::every]
    passages = [tok.decode(ids[a:b].tolist(), skip_special_tokens=True).strip() for a, b in spans]
    return "\n\n".join(p for p in passages if p), len(passages), sum(b - a for a, b in spans)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out", type=Path)
    ap.add_argument("--data", type=Path, default=ROOT / "train" / "data")
    ap.add_argument("--sources", default=None, help="comma-separated source names (default: all)")
    ap.add_argument("--every", type=int, default=1, help="keep every N-th passage (default: all)")
    a = ap.parse_args(argv)
    if a.every < 1:
        raise SystemExit("--every: N must be at least 1")
    text, n, tokens = heldout_text(a.data, a.sources.split(",") if a.sources else None, a.every)
    a.out.parent.mkdir(parents=True, exist_ok=True)
    a.out.write_text(text)
    print(f"{n} passages, {len(text)} characters, {len(text.encode())} bytes, {tokens} tokens → {a.out}")


if __name__ == "__main__":
    main()
