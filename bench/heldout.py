"""Held-out text for perplexity benchmarks: the validation split that train/data.py built
(passages the tokenizer and the model never trained on), decoded back to text.

Usage: python bench/heldout.py OUT.txt   (needs `python train/data.py fetch && build` first)
"""
import sys
from pathlib import Path

import numpy as np
from tokenizers import Tokenizer

root = Path(__file__).resolve().parent.parent
data = root / "train" / "data"
ids = np.fromfile(data / "val.u16", dtype=np.uint16)
tok = Tokenizer.from_file(str(data / "tokenizer.json"))
# Passages are stored as <|bos|> text <|eos|>: split at bos, drop the special tokens.
bos = tok.token_to_id("<|bos|>")
cuts = np.flatnonzero(ids == bos).tolist() + [len(ids)]
passages = [tok.decode(ids[a:b].tolist(), skip_special_tokens=True).strip() for a, b in zip(cuts, cuts[1:])]
text = "\n\n".join(p for p in passages if p)
Path(sys.argv[1]).write_text(text)
print(f"{len(passages)} passages, {len(text)} characters, {len(ids)} tokens → {sys.argv[1]}")
