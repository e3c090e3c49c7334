"""Attention of the parallel form (training, and the parallel semantics of spec §5).

Two regimes, both one masked softmax per layer:
- parallel: at pass k every row sees the pass-k keys and values of the rows ≤ it (a
  sliding layer only the last `window` of them);
- decode: every row sees the *final-pass* keys and values of the earlier rows, given from
  an earlier forward, and its own current-pass entry, as a decoded token does (§5).

Both layer kinds take their visibility from a mask tensor rather than from code, so that
one compiled layer graph serves sliding and full layers alike.

Queries arrive per query head [B, T, H, d], keys and values per KV head [B, T, K, d];
query head a reads KV head ⌊a/4⌋.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F


def window_mask(t: int, window: int | None, device=None) -> torch.Tensor:
    """[t, t] bool, True where row i sees key j: j ≤ i and (sliding) i − j < window."""
    i = torch.arange(t, device=device)[:, None]
    j = torch.arange(t, device=device)[None, :]
    ok = j <= i
    if window is not None:
        ok = ok & (i - j < window)
    return ok


def decode_mask(t: int, window: int | None, device=None) -> torch.Tensor:
    """[t, 2t] bool over the keys [final-pass entries; current entries]: row i sees the
    earlier rows' final entries (in its window) and only its own current entry."""
    own = torch.eye(t, dtype=torch.bool, device=device)
    return torch.cat((window_mask(t, window, device) & ~own, own), dim=1)


def masked_attention(q, k, v, mask, scale: float) -> torch.Tensor:
    """softmax(λ q·k) v under `mask` [T, keys]: z [B, T, H, d]."""
    group = q.shape[2] // k.shape[2]
    # KV head c serves query heads 4c … 4c+3: repeat_interleave keeps that order.
    k = k.repeat_interleave(group, dim=2).transpose(1, 2)
    v = v.repeat_interleave(group, dim=2).transpose(1, 2)
    z = F.scaled_dot_product_attention(q.transpose(1, 2), k, v, attn_mask=mask, scale=scale)
    return z.transpose(1, 2)
