"""Step-wise decoding (spec §5 and §6): the oracle the engine is tested against.

A session feeds segments: a prompt (every row all P passes, the rows seeing one another
with the parallel semantics, in chunks of any size) or a decoded token (one row, which
may exit early). Earlier positions are seen through one cache per layer that holds the
keys and values of the last pass each position ran. Run it in float64 for the oracle.
"""

from __future__ import annotations

import torch

from . import exits
from .cache import Full, Ring, Segment
from .config import O1, Exit
from .model import Dory
from .nystrom import Nystrom


class Session:
    def __init__(self, model: Dory, attention: str = "exact", o1: O1 | None = None,
                 exit: Exit | None = None):
        if attention not in ("exact", "o1"):
            raise ValueError(f"attention must be 'exact' or 'o1', got {attention!r}")
        cfg = model.cfg
        self.model, self.cfg = model, cfg
        self.exit = exit if exit is not None else cfg.exit
        self.o1 = (o1 or cfg.o1 or O1()) if attention == "o1" else None
        dtype = model.embed.dtype
        self.caches: list = []
        for kind in cfg.layers:
            if kind == "sliding":
                self.caches.append(Ring(cfg.window, cfg.kv_heads, cfg.head_dim, dtype))
            elif self.o1 is not None:
                self.caches.append(Nystrom(self.o1, cfg.heads, cfg.kv_heads, cfg.head_dim, cfg.scale))
            else:
                self.caches.append(Full(cfg.kv_heads, cfg.head_dim, dtype))
        self.pos = 0  # the next position
        self.segments = 0  # segments (prompts and steps) fed so far

    @property
    def sealed(self) -> bool:
        return any(isinstance(c, Nystrom) and c.sealed for c in self.caches)

    # -- the public steps -------------------------------------------------------------

    @torch.no_grad()
    def prompt(self, ids: list[int], chunk: int | None = None, bos: bool = False) -> torch.Tensor:
        """Feeds a prompt segment; returns the logits of every row [n, V].

        bos: prepend the config's bos_token_id when this is the session's first segment
        and the ids do not start with it (spec §5). chunk: cut the segment into chunks of
        this many rows (the logits must not depend on it)."""
        ids = list(ids)
        if bos and self.segments == 0 and self.cfg.bos is not None and (not ids or ids[0] != self.cfg.bos):
            ids = [self.cfg.bos] + ids
        if not ids:
            raise ValueError("a prompt needs at least one token")
        for t in ids:
            if not 0 <= t < self.cfg.vocab_size:
                raise ValueError(f"token id {t} outside the vocabulary [0, {self.cfg.vocab_size})")
        if chunk is not None and chunk < 1:
            raise ValueError(f"chunk must be ≥ 1, got {chunk}")
        self._begin_step(self.pos)
        if self.sealed:
            # Once a full layer is sealed, later segments go one row at a time as
            # decoding steps: all passes, no early exit (spec §5).
            rows = []
            for i, t in enumerate(ids):
                if i:
                    self._begin_step(self.pos)
                rows.append(self._segment([t], self.pos, allow_exit=False)[0][0])
            self.segments += 1
            return torch.stack(rows)
        start = self.pos
        seg = Segment(start, len(self.cfg.layers), self.cfg.passes)
        size = chunk or len(ids)
        out = []
        for a in range(0, len(ids), size):
            logits, _ = self._chunk(ids[a:a + size], start + a, seg, allow_exit=False)
            out.append(logits)
        self.segments += 1
        return torch.cat(out)

    @torch.no_grad()
    def step(self, token: int) -> tuple[torch.Tensor, int]:
        """Feeds one decoded token; returns its logits [V] (the read-out of the pass it
        exited at) and the passes it used."""
        if self.segments == 0:
            raise ValueError("a session starts with a prompt")
        if not 0 <= token < self.cfg.vocab_size:
            raise ValueError(f"token id {token} outside the vocabulary [0, {self.cfg.vocab_size})")
        self._begin_step(self.pos)
        logits, passes = self._segment([token], self.pos, allow_exit=True)
        self.segments += 1
        return logits[0], passes

    # -- internals ----------------------------------------------------------------------

    def _begin_step(self, p: int) -> None:
        """The start of a step other than the first segment: seal the full layers that
        reach seal_at, and push the position leaving the window of sealed ones."""
        if self.segments == 0 or self.o1 is None:
            return
        for cache in self.caches:
            if not isinstance(cache, Nystrom):
                continue
            if not cache.sealed:
                if p >= self.o1.seal_position:
                    cache.seal(p)
            elif cache.sealed_at < p:
                cache.push(p)

    def _segment(self, ids, start, allow_exit):
        seg = Segment(start, len(self.cfg.layers), self.cfg.passes)
        return self._chunk(ids, start, seg, allow_exit)

    def _chunk(self, ids, start, seg: Segment, allow_exit: bool):
        """Runs rows at positions [start, start + n) through the passes, commits each
        layer's last-pass entries to the caches, returns (logits [n, V], passes)."""
        m, cfg = self.model, self.cfg
        n = len(ids)
        dtype = m.embed.dtype
        positions = torch.arange(start, start + n)
        cos, sin = m.rope(positions, dtype)
        x = m.embed[torch.tensor(ids)]
        h = m.enter(x)
        rule = self.exit if allow_exit else None
        previous = None
        logits, used = None, cfg.passes
        for k in range(1, cfg.passes + 1):
            for i, layer in enumerate(m.layers):
                h = layer.run(h, cos, sin, self._attend_fn(i, k, positions, seg))
            if k == cfg.passes:
                logits = m.logits(m.leave(h))
                break
            s, h = m.between(h, x)
            if exits.reads_after(rule, k, cfg.passes):
                read = m.logits(s)
                if exits.tests_after(rule, k, cfg.passes) and \
                        exits.holds(rule, exits.statistic(rule, read[0], previous)):
                    logits, used = read, k
                    break
                previous = read[0]
        self._commit(seg, start, n, used)
        self.pos = start + n
        return logits, used

    def _attend_fn(self, layer: int, k_pass: int, positions: torch.Tensor, seg: Segment):
        cache = self.caches[layer]
        cfg = self.cfg
        first = int(positions[0])
        last = int(positions[-1])

        def attend(q, k, v):
            seg.put(layer, k_pass, q, k, v)
            if isinstance(cache, Nystrom) and cache.sealed:
                if len(positions) != 1:
                    raise RuntimeError("a sealed layer runs one row per step")
                return cache.attend(first, q[0], k[0], v[0])[None]
            window = cfg.window if isinstance(cache, Ring) else None
            lo = 0 if window is None else max(0, first + 1 - window)
            ck, cv = cache.read(min(lo, seg.start), seg.start) if lo < seg.start else (k[:0], v[:0])
            sk, sv = seg.read(layer, k_pass, seg.start, last + 1)
            keys = torch.cat((ck, sk))
            values = torch.cat((cv, sv))
            key_pos = torch.arange(min(lo, seg.start), last + 1)
            return exact_rows(q, keys, values, positions, key_pos, window, cfg.scale)

        return attend

    def _commit(self, seg: Segment, start: int, n: int, final_pass: int) -> None:
        for i, cache in enumerate(self.caches):
            q, k, v = seg.rows(i, final_pass, start, start + n)
            for r in range(n):
                if isinstance(cache, Nystrom):
                    cache.write(start + r, q[r], k[r], v[r])
                else:
                    cache.write(start + r, k[r], v[r])


def exact_rows(q, keys, values, positions, key_pos, window, scale):
    """Softmax attention of rows q [n, H, d] at `positions` over keys/values [m, K, d] at
    `key_pos`: a row sees keys at j ≤ p (and p − j < window for a sliding layer)."""
    group = q.shape[1] // keys.shape[1]
    kh = keys.repeat_interleave(group, dim=1)  # [m, H, d]
    vh = values.repeat_interleave(group, dim=1)
    scores = scale * torch.einsum("nhd,mhd->nhm", q, kh)
    see = key_pos[None, :] <= positions[:, None]
    if window is not None:
        see &= positions[:, None] - key_pos[None, :] < window
    scores = scores.masked_fill(~see[:, None, :], float("-inf"))
    w = torch.softmax(scores, dim=-1)
    return torch.einsum("nhm,mhd->nhd", w, vh)
