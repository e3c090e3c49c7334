"""The early-exit rule of decoding (spec §5): when to read out, when to test, the test."""

from __future__ import annotations

import torch

from .config import Exit


def reads_after(rule: Exit | None, k: int, passes: int) -> bool:
    """Read-outs happen after every pass k with max(1, min_passes − 1) ≤ k < P (none when
    there is no rule: a read-out leaves the state as mode 1 would, so skipping it changes
    nothing)."""
    if rule is None or rule.criterion == "none":
        return False
    return max(1, rule.min_passes - 1) <= k < passes


def tests_after(rule: Exit | None, k: int, passes: int) -> bool:
    """The rule is tested after pass k with k ≥ min_passes (and k ≥ 2 under kl), k < P."""
    if rule is None or rule.criterion == "none":
        return False
    first = max(rule.min_passes, 2) if rule.criterion == "kl" else rule.min_passes
    return first <= k < passes


def statistic(rule: Exit, logits: torch.Tensor, previous: torch.Tensor | None) -> float:
    """The number compared with τ: KL(p_k ‖ p_{k−1}) for kl, max p_k for confidence, on
    the softmax of the raw logits (temperature 1). ln p is logit − log-sum-exp, never the
    log of an underflowed probability."""
    lp = logits - torch.logsumexp(logits, dim=-1)
    if rule.criterion == "confidence":
        return float(lp.max().exp())
    if previous is None:
        raise ValueError("the kl rule needs the previous pass's read-out")
    lq = previous - torch.logsumexp(previous, dim=-1)
    return float((lp.exp() * (lp - lq)).sum())


def holds(rule: Exit, stat: float) -> bool:
    if rule.criterion == "kl":
        return stat < rule.threshold
    return stat >= rule.threshold
