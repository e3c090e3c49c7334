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

from . import exits
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


def _ce(model, state, targets) -> float:
    """Summed cross-entropy; the logits stay in the parameters' dtype (float32 under
    autocast, float64 for the oracle)."""
    logits = model.logits(state)
    return float(F.cross_entropy(logits.flatten(0, 1), targets.flatten(), reduction="sum"))


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
                sums[k] += _ce(model, s, w[:, 1:])
        count += w[:, 1:].numel()
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
                sums[it] += _ce(model, states[-1], w[:, 1:])
        count += w[:, 1:].numel()
    return [math.exp(s / count) for s in sums]


@torch.no_grad()
def decode_with_exit(model, wins: torch.Tensor, batch: int, device, rule,
                     iterations: int, autocast=None) -> tuple[float, float]:
    """Perplexity and mean passes with every token decoded step by step under an early-exit
    rule (spec §5): each row's logits are those of the pass it exits at, and later rows
    see the keys and values of that pass. The same fixed point as decode_semantics, each
    iteration re-deciding the exits from the previous iteration's cached entries."""
    passes = model.cfg.passes
    nll, count, used = 0.0, 0, 0.0
    for a in range(0, len(wins), batch):
        w = wins[a:a + batch].to(device)
        x, y = w[:, :-1], w[:, 1:]
        with _autocast(device, autocast):
            _, kv = model(x, passes=passes)
            for _ in range(iterations):
                states, kvs = model(x, passes=passes, readouts=True, final_kv=kv, every_pass_kv=True)
                logits = [model.logits(s) for s in states]
                exit_at = torch.full(y.shape, passes, device=device)
                previous = None
                for k in range(1, passes):
                    if not exits.reads_after(rule, k, passes):
                        continue
                    read = logits[k - 1]
                    if exits.tests_after(rule, k, passes):
                        ok = exits.holds(rule, exits.statistic(rule, read, previous))
                        exit_at = torch.where((exit_at == passes) & ok, torch.full_like(exit_at, k), exit_at)
                    previous = read
                exit_at[:, 0] = passes  # the first row is the prompt: all passes (§5)
                kv = [(_choose(kvs, i, 0, exit_at), _choose(kvs, i, 1, exit_at)) for i in range(len(kvs[0]))]
            chosen = torch.stack(logits).gather(
                0, (exit_at - 1)[None, ..., None].expand(1, *y.shape, logits[0].shape[-1]))[0]
        nll += float(torch.nn.functional.cross_entropy(chosen.flatten(0, 1), y.flatten(), reduction="sum"))
        count += y.numel()
        used += float(exit_at.double().sum())
    return math.exp(nll / count), used / count


def _choose(kvs, layer: int, which: int, exit_at: torch.Tensor) -> torch.Tensor:
    """The key (which = 0) or value (1) of each row from the pass it exits at."""
    per_pass = torch.stack([kvs[k][layer][which] for k in range(len(kvs))])  # [P, B, T, K, d]
    idx = (exit_at - 1)[None, :, :, None, None].expand(1, *per_pass.shape[1:])
    return per_pass.gather(0, idx)[0]
