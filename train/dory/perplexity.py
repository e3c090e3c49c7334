"""Validation perplexity of the parallel form, per pass and in the decode semantics.

- Per pass: one P-pass forward with read-outs gives every pass's logits at once, because
  in the parallel semantics the first k passes of a P-pass run are a k-pass run.
- Decode semantics (every token fed as a decoding step, all p passes, no exit): the fixed
  point of the decode regime. Row r depends only on the final entries of rows < r, so
  iteration n is exact on the first n rows; the rows converge much sooner in practice,
  and the table reports every iteration so the reader sees the convergence.
"""

from __future__ import annotations

import contextlib
import math

import numpy as np
import torch
import torch.nn.functional as F

from . import tokens as token_files


def windows(ids: np.ndarray, bos: int, length: int, limit: int | None = None) -> torch.Tensor:
    """Non-overlapping windows of `length` tokens, each starting at a <|bos|> (as every
    training window and every session does): [N, length]."""
    out, nxt = [], 0
    for s in token_files.starts(ids, bos, length):
        if s >= nxt:
            out.append(ids[s:s + length])
            nxt = s + length
            if limit and len(out) >= limit:
                break
    if not out:
        raise ValueError(f"no window of {length} tokens starts at a bos in {len(ids)} tokens")
    return torch.from_numpy(np.stack(out))


def _autocast(device: torch.device, dtype: torch.dtype | None):
    if dtype is None:
        return contextlib.nullcontext()
    return torch.autocast(device.type, dtype=dtype)


def _ce(model, state, targets) -> tuple[float, int]:
    logits = model.logits(state).float()
    loss = F.cross_entropy(logits.flatten(0, 1), targets.flatten(), reduction="sum")
    return float(loss), targets.numel()


@torch.no_grad()
def per_pass(model, wins: torch.Tensor, batch: int, device, autocast=None) -> list[float]:
    """Perplexity after each pass 1..P: [ppl_1, …, ppl_P]."""
    passes = model.cfg.passes
    sums, count = [0.0] * passes, 0
    for a in range(0, len(wins), batch):
        w = wins[a:a + batch].to(device)
        with _autocast(device, autocast):
            states, _ = model(w[:, :-1], passes=passes, readouts=True)
            for k, s in enumerate(states):
                total, n = _ce(model, s, w[:, 1:])
                sums[k] += total
        count += n
    return [math.exp(s / count) for s in sums]


@torch.no_grad()
def decode_semantics(model, wins: torch.Tensor, batch: int, device, passes: int,
                     iterations: int, autocast=None) -> list[float]:
    """Perplexity with every token decoded step by step (all `passes` passes): the
    decode regime iterated; entry n is the perplexity after n + 1 iterations."""
    sums, count = [0.0] * iterations, 0
    for a in range(0, len(wins), batch):
        w = wins[a:a + batch].to(device)
        with _autocast(device, autocast):
            _, kv = model(w[:, :-1], passes=passes)
            for it in range(iterations):
                states, kv = model(w[:, :-1], passes=passes, final_kv=kv)
                total, n = _ce(model, states[-1], w[:, 1:])
                sums[it] += total
        count += n
    return [math.exp(s / count) for s in sums]
