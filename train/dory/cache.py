"""Per-layer key/value caches of step-wise decoding (spec §5), one per layer, shared by
all passes: each position holds the keys and values of the last pass it ran.

Every slot remembers the position it holds, so that reading a position that was never
written or was overwritten is an error here rather than a silently wrong softmax.
"""

from __future__ import annotations

import torch


class Ring:
    """A sliding layer's cache: `slots` entries, position p in slot p mod slots. The
    positions a row reads from here are those before its segment, at most W − 1 of them,
    so W slots suffice (the segment's own rows come from the segment store)."""

    def __init__(self, slots: int, kv_heads: int, head_dim: int, dtype: torch.dtype):
        self.slots = slots
        self.k = torch.zeros(slots, kv_heads, head_dim, dtype=dtype)
        self.v = torch.zeros(slots, kv_heads, head_dim, dtype=dtype)
        self.pos = torch.full((slots,), -1, dtype=torch.long)

    def write(self, p: int, k: torch.Tensor, v: torch.Tensor) -> None:
        s = p % self.slots
        self.k[s], self.v[s], self.pos[s] = k, v, p

    def read(self, lo: int, hi: int) -> tuple[torch.Tensor, torch.Tensor]:
        """Keys and values of positions [lo, hi): [hi − lo, K, d]."""
        if hi - lo > self.slots:
            raise IndexError(f"ring of {self.slots} slots cannot hold positions [{lo}, {hi})")
        idx = torch.arange(lo, hi) % self.slots
        held = self.pos[idx]
        want = torch.arange(lo, hi)
        if not torch.equal(held, want):
            bad = int(want[held != want][0])
            raise IndexError(f"position {bad} is not in the ring (slot holds {int(self.pos[bad % self.slots])})")
        return self.k[idx], self.v[idx]


class Full:
    """An exact full layer's cache: every position since 0."""

    def __init__(self, kv_heads: int, head_dim: int, dtype: torch.dtype):
        self.k = torch.zeros(0, kv_heads, head_dim, dtype=dtype)
        self.v = torch.zeros(0, kv_heads, head_dim, dtype=dtype)

    def __len__(self) -> int:
        return self.k.shape[0]

    def write(self, p: int, k: torch.Tensor, v: torch.Tensor) -> None:
        n = len(self)
        if p > n:
            raise IndexError(f"position {p} written before position {n}")
        if p == n:
            # Growth by concatenation is fine for an oracle; an engine preallocates.
            self.k = torch.cat((self.k, k[None]))
            self.v = torch.cat((self.v, v[None]))
        else:
            self.k[p], self.v[p] = k, v

    def read(self, lo: int, hi: int) -> tuple[torch.Tensor, torch.Tensor]:
        if hi > len(self):
            raise IndexError(f"positions [{lo}, {hi}) read from a cache of {len(self)}")
        return self.k[lo:hi], self.v[lo:hi]


class Segment:
    """The keys and values of the current segment's rows at every pass (chunked prefill
    must show a later chunk the pass-k entries of the earlier chunks, spec §5), and the
    prepared queries the O(1) seal samples."""

    def __init__(self, start: int, layers: int, passes: int):
        self.start = start
        self.kv = [[None] * passes for _ in range(layers)]
        self.q = [[None] * passes for _ in range(layers)]

    def put(self, layer: int, k_pass: int, q, k, v) -> None:
        """Appends the rows of the current chunk at pass k_pass (1-based)."""
        slot = k_pass - 1
        old = self.kv[layer][slot]
        if old is None:
            self.kv[layer][slot] = (k, v)
            self.q[layer][slot] = q
        else:
            self.kv[layer][slot] = (torch.cat((old[0], k)), torch.cat((old[1], v)))
            self.q[layer][slot] = torch.cat((self.q[layer][slot], q))

    def read(self, layer: int, k_pass: int, lo: int, hi: int):
        """Keys and values at pass k_pass of the segment positions [lo, hi)."""
        k, v = self.kv[layer][k_pass - 1]
        a, b = lo - self.start, hi - self.start
        if a < 0 or b > k.shape[0]:
            raise IndexError(f"positions [{lo}, {hi}) are not in the segment's pass-{k_pass} store")
        return k[a:b], v[a:b]

    def rows(self, layer: int, k_pass: int, lo: int, hi: int):
        """(q, k, v) of positions [lo, hi) at pass k_pass, for committing to the caches."""
        a, b = lo - self.start, hi - self.start
        k, v = self.kv[layer][k_pass - 1]
        return self.q[layer][k_pass - 1][a:b], k[a:b], v[a:b]
