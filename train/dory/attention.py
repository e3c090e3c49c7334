"""Attention of the parallel form (training and the parallel semantics of spec §5).

Two regimes:
- parallel: at pass k every row sees the pass-k keys and values of the rows ≤ it (the
  sliding layer only the last `window` of them);
- decode: every row sees the *final-pass* keys and values of the earlier rows, given from
  outside (a previous forward), and its own current-pass entry, as a decoded token does.

Queries arrive per query head [B, T, H, d], keys and values per KV head [B, T, K, d];
query head a reads KV head ⌊a/4⌋.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F


def _heads_first(q, k, v):
    group = q.shape[2] // k.shape[2]
    # KV head c serves query heads 4c … 4c+3: repeat_interleave keeps that order.
    k = k.repeat_interleave(group, dim=2)
    v = v.repeat_interleave(group, dim=2)
    return q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)


def window_mask(t: int, window: int | None, device) -> torch.Tensor:
    """[t, t] bool, True where row i may see key j: j ≤ i and (sliding) i − j < window."""
    i = torch.arange(t, device=device)[:, None]
    j = torch.arange(t, device=device)[None, :]
    ok = j <= i
    if window is not None:
        ok = ok & (i - j < window)
    return ok


def parallel_attention(q, k, v, window: int | None, scale: float) -> torch.Tensor:
    """Causal (window None) or sliding attention over the current pass: z [B, T, H, d]."""
    t = q.shape[1]
    qh, kh, vh = _heads_first(q, k, v)
    if window is None or window >= t:
        # Full causal: the flash kernel applies; no mask tensor is needed.
        z = F.scaled_dot_product_attention(qh, kh, vh, is_causal=True, scale=scale)
    else:
        mask = window_mask(t, window, q.device)
        z = F.scaled_dot_product_attention(qh, kh, vh, attn_mask=mask, scale=scale)
    return z.transpose(1, 2)


def decode_attention(q, k, v, k_final, v_final, window: int | None, scale: float) -> torch.Tensor:
    """The decode regime: row i sees the final-pass entries of rows j < i (in its window)
    and its own current entry. One softmax over 2T keys whose mask picks, for row i, the
    earlier rows from the first half and only the diagonal from the second."""
    t = q.shape[1]
    earlier = window_mask(t, window, q.device) & ~torch.eye(t, dtype=torch.bool, device=q.device)
    own = torch.eye(t, dtype=torch.bool, device=q.device)
    mask = torch.cat((earlier, own), dim=1)
    qh, kh, vh = _heads_first(q, torch.cat((k_final.to(k.dtype), k), 1),
                              torch.cat((v_final.to(v.dtype), v), 1))
    z = F.scaled_dot_product_attention(qh, kh, vh, attn_mask=mask, scale=scale)
    return z.transpose(1, 2)
