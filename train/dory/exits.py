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


def statistic(rule: Exit, logits: torch.Tensor, previous: torch.Tensor | None) -> torch.Tensor:
    """The number compared with τ, over the last dimension (so for one row or a batch):
    KL(p_k ‖ p_{k−1}) for kl, max p_k for confidence, on the softmax of the raw logits
    (temperature 1), in float64. ln p is logit − log-sum-exp, never the log of an
    underflowed probability."""
    lp = logits.double().log_softmax(-1)
    if rule.criterion == "confidence":
        return lp.max(-1).values.exp()
    if previous is None:
        raise ValueError("the kl rule needs the previous pass's read-out")
    lq = previous.double().log_softmax(-1)
    return (lp.exp() * (lp - lq)).sum(-1)


def holds(rule: Exit, stat: torch.Tensor) -> torch.Tensor:
    return stat < rule.threshold if rule.criterion == "kl" else stat >= rule.threshold
