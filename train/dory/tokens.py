"""Token files: a stream of uint16 ids (little-endian), passages laid end to end as
<|bos|> text <|eos|>. Raw (`.u16`) for local use, xz-compressed (`.u16.xz`) to carry."""

from __future__ import annotations

import lzma
from pathlib import Path

import numpy as np

MAGIC_LIMIT = 1 << 16  # ids must fit uint16


def write(path: str | Path, ids: np.ndarray) -> None:
    ids = np.asarray(ids)
    if ids.size and (ids.min() < 0 or ids.max() >= MAGIC_LIMIT):
        raise ValueError(f"{path}: ids must lie in [0, 65536) for a uint16 token file")
    data = ids.astype("<u2").tobytes()
    path = Path(path)
    if path.suffix == ".xz":
        path.write_bytes(lzma.compress(data, preset=6))
    else:
        path.write_bytes(data)


def read(path: str | Path) -> np.ndarray:
    path = Path(path)
    data = path.read_bytes()
    if path.suffix == ".xz":
        data = lzma.decompress(data)
    if len(data) % 2:
        raise ValueError(f"{path}: odd byte count, not a uint16 token file")
    return np.frombuffer(data, dtype="<u2").astype(np.int64)


def starts(ids: np.ndarray, bos: int, length: int) -> np.ndarray:
    """Positions of <|bos|> from which `length` tokens remain: the starts of training
    windows, so that every window begins as a session does (bos at position 0)."""
    pos = np.flatnonzero(ids == bos)
    return pos[pos + length <= len(ids)]
