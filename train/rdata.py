"""Just enough of R's serialization format to read the character vectors of an R package's
lazy-load data base (`data/Rdata.rdb` + `Rdata.rdx`), as Debian's r-cran-* packages ship
them: the XDR form of R's `serialize` (versions 2 and 3), compressed per object.

    objects = lazyload(files)   # files: {"Rdata.rdb": bytes, "Rdata.rdx": bytes} → {name: value}

Values: character vectors → list[str | None], named vectors → dict, numbers → lists,
pairlists → list of (tag, value); what data sets of text need and nothing more.
"""

from __future__ import annotations

import bz2
import gzip
import lzma
import struct
import zlib

NILVALUE, REF, ALTREP = 254, 255, 238
SPECIALS = {253, 252, 251, 250, 242, 241}  # global env, unbound, missing arg, base ns, empty/base env


class Reader:
    def __init__(self, data: bytes):
        self.b, self.i, self.refs = data, 0, []

    def int(self) -> int:
        v = struct.unpack_from(">i", self.b, self.i)[0]
        self.i += 4
        return v

    def raw(self, n: int) -> bytes:
        v = self.b[self.i:self.i + n]
        self.i += n
        return v

    def stream(self):
        if self.raw(2) != b"X\n":
            raise ValueError("not an XDR serialization (R's default)")
        version = self.int()
        self.int(), self.int()  # writer's and minimal reader's R versions
        if version == 3:
            self.raw(self.int())  # native encoding name
        elif version != 2:
            raise ValueError(f"serialization version {version}")
        return self.item()

    def item(self):
        flags = self.int()
        kind, has_attr, has_tag = flags & 0xFF, flags & (1 << 9), flags & (1 << 10)
        if kind == NILVALUE or kind in SPECIALS:
            return None
        if kind == REF:
            return self.refs[(flags >> 8 or self.int()) - 1]
        if kind in (247, 248, 249):  # persistent name, package, namespace: a string vector
            if self.int() != 0:
                raise ValueError("unexpected persistent-name flag")
            v = [self.item() for _ in range(self.int())]
            self.refs.append(v)
            return v
        if kind == 1:  # symbol
            v = self.item()
            self.refs.append(v)
            return v
        if kind in (2, 5, 6, 17, 239, 240):  # pairlist, promise, language, dots
            attr = self.item() if has_attr else None  # noqa: F841
            tag = self.item() if has_tag else None
            car, cdr = self.item(), self.item()
            return [(tag, car)] + (cdr if isinstance(cdr, list) else [])
        if kind == 9:  # CHARSXP
            n = self.int()
            return None if n == -1 else self.raw(n).decode("utf-8", "replace")
        if kind == 4:  # environment
            env: dict = {}
            self.refs.append(env)
            self.int()  # locked
            for key in ("enclos", "frame", "hashtab", "attrib"):
                env[key] = self.item()
            return env
        if kind == ALTREP:
            info, state, _ = self.item(), self.item(), self.item()
            return ("altrep", info, state)
        n = self.int()
        if kind in (10, 13):  # logical, integer
            v = list(struct.unpack_from(f">{n}i", self.b, self.i))
            self.i += 4 * n
        elif kind == 14:  # double
            v = list(struct.unpack_from(f">{n}d", self.b, self.i))
            self.i += 8 * n
        elif kind in (16, 19, 20):  # character vector, list, expression
            v = [self.item() for _ in range(n)]
        else:
            raise ValueError(f"R object type {kind} is not supported")
        if has_attr:
            attrs = dict(self.item())
            names = attrs.get("names")
            if isinstance(names, list) and len(names) == len(v):
                return dict(zip(names, v))
        return v


def decompress(blob: bytes) -> bytes:
    """One object of a lazy-load data base: a 4-byte length, then zlib, or a type byte
    ('0' none, '1' zlib, '2' bzip2, 'Z' xz) and the stream."""
    kind = blob[4:5]
    if kind == b"Z":
        return lzma.decompress(blob[5:])
    if kind == b"2":
        return bz2.decompress(blob[5:])
    if kind == b"1":
        return zlib.decompress(blob[5:])
    if kind == b"0":
        return blob[5:]
    return zlib.decompress(blob[4:])


def lazyload(rdb: bytes, rdx: bytes) -> dict:
    """Every object of a lazy-load data base, by name."""
    index = Reader(gzip.decompress(rdx)).stream()
    out = {}
    for name, (offset, length) in index["variables"].items():
        out[name] = Reader(decompress(rdb[int(offset):int(offset) + int(length)])).stream()
    return out
