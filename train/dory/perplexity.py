"""Validation perplexity and bits per byte of the parallel form, per pass and in the decode
semantics.

- Bits per byte (the engine's `dory ppl` computes the same): over the scored targets,
  bpb = Σ −ln p(target) / (ln 2 · B), B = Σ the UTF-8 byte length of each target token's
  bytes, special tokens (<|bos|>, <|eos|>) counting 0. On a text cut into windows that
  each start with <|bos|> (`text_windows`), every text token is a target once and B is
  the text's size in bytes.
- Per pass: one P-pass forward with read-outs gives every pass's logits at once, because
  in the parallel semantics the first k passes of a P-pass run are a k-pass run.
- Decode semantics (every token fed as a decoding step, all p passes, no exit): the fixed
  point of the decode regime. Row r depends only on the final entries of rows < r, so
  iteration n is exact on the first n rows; the rows converge much sooner in practice,
  and the table reports every iteration so the reader sees the convergence.
"""

from __future__ import annotations

import contextlib
import json
import math
from pathlib import Path

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


def per_pass(model, wins: torch.Tensor, batch: int, device, autocast=None,
             passes: int | None = None) -> list[float]:
    """Perplexity after each pass 1..P (or 1..passes): [ppl_1, …, ppl_P]."""
    sums, count = per_pass_nll(model, wins, batch, device, autocast, passes)
    return [math.exp(s / count) for s in sums]


@torch.no_grad()
def per_pass_nll(model, wins: torch.Tensor, batch: int, device, autocast=None,
                 passes: int | None = None) -> tuple[list[float], int]:
    """Summed −ln p of the targets after each pass 1..P (or 1..passes, which may exceed
    P: the loop run further than the model is), and the number of targets."""
    passes = passes or model.cfg.passes
    sums, count = [0.0] * passes, 0
    for a in range(0, len(wins), batch):
        w = wins[a:a + batch].to(device)
        with _autocast(device, autocast):
            states, _ = model(w[:, :-1], passes=passes, readouts=True)
            for k, s in enumerate(states):
                sums[k] += _ce(model, s, w[:, 1:])
        count += w[:, 1:].numel()
    return sums, count


def decode_semantics(model, wins: torch.Tensor, batch: int, device, passes: int,
                     iterations: int, autocast=None) -> list[float]:
    """Perplexity with every token decoded step by step (all `passes` passes): the
    decode regime iterated; entry n is the perplexity after n + 1 iterations."""
    sums, count = decode_nll(model, wins, batch, device, passes, iterations, autocast)
    return [math.exp(s / count) for s in sums]


@torch.no_grad()
def decode_nll(model, wins: torch.Tensor, batch: int, device, passes: int,
               iterations: int, autocast=None) -> tuple[list[float], int]:
    """decode_semantics' summed −ln p after each iteration, and the number of targets."""
    sums, count = [0.0] * iterations, 0
    for a in range(0, len(wins), batch):
        w = wins[a:a + batch].to(device)
        with _autocast(device, autocast):
            _, kv = model(w[:, :-1], passes=passes)
            for it in range(iterations):
                states, kv = model(w[:, :-1], passes=passes, final_kv=kv)
                sums[it] += _ce(model, states[-1], w[:, 1:])
        count += w[:, 1:].numel()
    return sums, count


# -- bits per byte ----------------------------------------------------------------------

def _bytes_to_unicode() -> dict[int, str]:
    """The byte-level BPE alphabet (GPT-2's): every byte as one printable character."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("\u00a1"), ord("\u00ac") + 1)) + \
        list(range(ord("\u00ae"), ord("\u00ff") + 1))
    cs, n = bs[:], 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return dict(zip(bs, map(chr, cs)))


def token_bytes(tokenizer_json: str | Path, vocab_size: int | None = None) -> np.ndarray:
    """The UTF-8 byte length of every token id's bytes, from a byte-level BPE tokenizer.json
    (read as JSON: no tokenizers library needed); special (added) tokens count 0."""
    spec = json.loads(Path(tokenizer_json).read_text())
    if (spec.get("decoder") or {}).get("type") != "ByteLevel":
        raise ValueError(f"{tokenizer_json}: bits per byte needs a byte-level BPE tokenizer")
    vocab = dict(spec["model"]["vocab"])
    special = {t["id"] for t in spec.get("added_tokens", []) if t.get("special")}
    for t in spec.get("added_tokens", []):
        vocab.setdefault(t["content"], t["id"])
    n = max(vocab_size or 0, max(vocab.values()) + 1)
    out = np.zeros(n, dtype=np.int64)
    alphabet = set(_bytes_to_unicode().values())
    for tok, i in vocab.items():
        if i in special:
            continue
        # A normal token is a string over the 256-character alphabet, one character a
        # byte; a non-special added token is plain text.
        out[i] = len(tok) if all(c in alphabet for c in tok) else len(tok.encode("utf-8"))
    return out


def target_bytes(wins: torch.Tensor, nbytes: np.ndarray) -> int:
    """B of a set of windows: the byte lengths of the scored targets (all but each first token)."""
    return int(nbytes[wins[:, 1:].numpy()].sum())


def bits_per_byte(nll: float, nbytes: int) -> float:
    """bpb from the summed −ln p (nats) of targets whose bytes number nbytes."""
    return nll / (math.log(2) * nbytes)


def text_windows(ids: np.ndarray, bos: int | None, length: int) -> list[torch.Tensor]:
    """A tokenized text cut as `dory ppl` cuts it: consecutive chunks of length − 1 tokens
    (length without bos), each after a <|bos|>; the last chunk may be shorter. Returned as
    one [N, length] batch of the full windows and, if any, a [1, n] batch of the rest."""
    room = length - (bos is not None)
    head = [] if bos is None else [bos]
    full = len(ids) // room
    out = []
    if full:
        body = np.asarray(ids[:full * room]).reshape(full, room)
        if head:
            body = np.concatenate([np.full((full, 1), bos), body], axis=1)
        out.append(torch.from_numpy(body.astype(np.int64)))
    rest = np.asarray(ids[full * room:])
    if len(rest) + len(head) >= 2:
        out.append(torch.from_numpy(np.array(head + rest.tolist(), dtype=np.int64))[None])
    return out


def score(model, batches: list[torch.Tensor], batch: int, device, nbytes: np.ndarray,
          iterations: int, autocast=None, decode: bool = True) -> dict:
    """Perplexity and bits per byte per pass (parallel semantics) and, with `decode`, in
    the decode semantics with 1..P passes (after `iterations` iterations of its fixed
    point): {"tokens", "bytes", "ppl_per_pass", "bpb_per_pass", "ppl_decode", "bpb_decode"}."""
    P = model.cfg.passes
    B = sum(target_bytes(w, nbytes) for w in batches)
    sums, count = [0.0] * P, 0
    for w in batches:
        s, c = per_pass_nll(model, w, batch, device, autocast)
        sums = [a + b for a, b in zip(sums, s)]
        count += c
    out = {"tokens": count, "bytes": B,
           "ppl_per_pass": [round(math.exp(s / count), 4) for s in sums],
           "bpb_per_pass": [round(bits_per_byte(s, B), 5) for s in sums]}
    if decode:
        out["ppl_decode"], out["bpb_decode"] = {}, {}
        for p in range(1, P + 1):
            d = [0.0] * iterations
            for w in batches:
                s, _ = decode_nll(model, w, batch, device, p, iterations, autocast)
                d = [a + b for a, b in zip(d, s)]
            out["ppl_decode"][p] = [round(math.exp(s / count), 4) for s in d]
            out["bpb_decode"][p] = [round(bits_per_byte(s, B), 5) for s in d]
    return out


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
