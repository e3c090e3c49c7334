"""The small pieces of spec §3 and §4 that every form of the model shares."""

from __future__ import annotations

import torch


def norm(x: torch.Tensor, eps: float) -> torch.Tensor:
    """N(x) = x / √(Σ x² + ε) over the last dimension, ε inside the root as the spec has it.

    Applied literally, also to vectors that are already unit: the ε moves a unit vector by
    ~ε/2 each time, and over a few dozen layers that would exceed the 1e-5 agreement bound
    if one side skipped it.
    """
    return x * torch.rsqrt((x * x).sum(-1, keepdim=True) + eps)


def rope_tables(positions: torch.Tensor, head_dim: int, theta: float,
                dtype: torch.dtype) -> tuple[torch.Tensor, torch.Tensor]:
    """cos and sin of p·θ_i, θ_i = theta^(−2i/d), i < d/2: [len(positions), d/2].

    The angle and its cosine and sine are computed in float64 and only then rounded to
    `dtype` (spec §3): q_scale makes attention depend on absolute positions, so the angle
    must stay exact at positions in the millions.
    """
    half = head_dim // 2
    i = torch.arange(half, dtype=torch.float64, device=positions.device)
    inv = theta ** (-2.0 * i / head_dim)
    ang = positions.to(torch.float64)[:, None] * inv[None, :]
    return torch.cos(ang).to(dtype), torch.sin(ang).to(dtype)


def rotate(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """RoPE on x [..., T, heads, d] with tables [T, d/2]: pairs (x_i, x_{i+d/2})."""
    half = x.shape[-1] // 2
    c = cos[:, None, :].to(x.dtype)
    s = sin[:, None, :].to(x.dtype)
    x1, x2 = x[..., :half], x[..., half:]
    return torch.cat((x1 * c - x2 * s, x2 * c + x1 * s), dim=-1)


def residual(h: torch.Tensor, o: torch.Tensor, alpha: torch.Tensor, eps: float) -> torch.Tensor:
    """The nGPT residual: h ← N(N(h) + α ⊙ (N(o) − N(h)))."""
    hn = norm(h, eps)
    return norm(hn + alpha * (norm(o.to(h.dtype), eps) - hn), eps)
