"""The O(1) full layer (spec §6): exact until the seal, then sinks + a window exactly and
the far field through Nyström landmarks. All of it in float64 (the oracle's dtype; the
seal's pseudo-inverse is f64 in every implementation).
"""

from __future__ import annotations

import torch

from .cache import Full, Ring
from .config import O1


def pinv(w: torch.Tensor, rcond: float) -> torch.Tensor:
    """Pseudo-inverse by SVD in f64; singular values s < rcond · s_max are dropped."""
    u, s, vh = torch.linalg.svd(w.double())
    keep = s >= rcond * s[0]
    inv = torch.where(keep, 1.0 / s, torch.zeros_like(s))
    return (vh.mT * inv[None, :]) @ u.mT


def spans(lo: int, hi: int, m: int) -> list[tuple[int, int]]:
    """[lo, hi) split into m contiguous near-equal parts: part b = [lo + ⌊b·n/m⌋, lo + ⌊(b+1)·n/m⌋)."""
    n = hi - lo
    return [(lo + b * n // m, lo + (b + 1) * n // m) for b in range(m)]


class Nystrom:
    """A full layer's cache in O(1) mode, for query heads H over KV heads K, head dim d."""

    def __init__(self, o1: O1, heads: int, kv_heads: int, head_dim: int, scale: float,
                 dtype: torch.dtype = torch.float64):
        self.o1 = o1
        self.heads, self.kv_heads, self.d = heads, kv_heads, head_dim
        self.scale = scale
        self.dtype = dtype
        self.exact: Full | None = Full(kv_heads, head_dim, dtype)  # until the seal
        self.queries: dict[int, torch.Tensor] = {}  # position ≡ 0 (mod stride) -> [H, d]
        self.sealed_at: int | None = None
        self.sinks_k = self.sinks_v = None
        self.window: Ring | None = None
        self.far_empty = True

    @property
    def sealed(self) -> bool:
        return self.sealed_at is not None

    def kv_head(self, a: int) -> int:
        return a // (self.heads // self.kv_heads)

    # -- before the seal: an exact cache that also samples prepared queries -----------

    def write(self, p: int, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> None:
        """Position p's entry of the last pass it ran (q: its prepared query [H, d])."""
        if self.sealed:
            self.window.write(p, k, v)
            return
        self.exact.write(p, k, v)
        if p % self.o1.stride == 0:
            self.queries[p] = q.clone()

    def read(self, lo: int, hi: int):
        return self.exact.read(lo, hi)

    # -- the seal -----------------------------------------------------------------------

    def seal(self, p: int) -> None:
        """Landmarks, their pseudo-inverses and the far statistics from positions [0, p)."""
        o = self.o1
        ns, w, m = o.sinks, o.window, o.landmarks
        keys, values = self.exact.read(0, p)
        keys, values = keys.double(), values.double()
        # Landmark keys: means of m contiguous segments of S = [ns, p), per KV head.
        self.k_land = torch.stack([keys[a:b].mean(0) for a, b in spans(ns, p, m)], dim=1)  # [K, m, d]
        # Landmark queries: means of m groups of the sampled positions of S, by index.
        sampled = [j for j in range(ns, p) if j % o.stride == 0]
        groups = spans(0, len(sampled), m)
        qs = torch.stack([self.queries[j].double() for j in sampled])  # [|Q|, H, d]
        self.q_land = torch.stack([qs[a:b].mean(0) for a, b in groups], dim=1)  # [H, m, d]
        k_of_head = self.k_land[[self.kv_head(a) for a in range(self.heads)]]  # [H, m, d]
        x = self.scale * self.q_land @ k_of_head.mT  # X_a[b][i]: [H, m(b), m(i)]
        self.r = x.max(dim=-1).values  # [H, m]
        wmat = torch.exp(x - self.r[..., None])
        self.mu = torch.stack([pinv(wmat[a], o.rcond) for a in range(self.heads)])  # [H, m(i), m(b)]
        # Far statistics over F = [ns, p − w] (empty when p − w < ns).
        self.M = torch.zeros(self.heads, m, dtype=torch.float64)
        self.mass = torch.zeros(self.heads, m, dtype=torch.float64)
        self.th = torch.zeros(self.heads, m, self.d, dtype=torch.float64)
        self.far_empty = True
        far_hi = p - w + 1
        if far_hi > ns:
            kf, vf = keys[ns:far_hi], values[ns:far_hi]  # [n, K, d]
            kf_h = kf[:, [self.kv_head(a) for a in range(self.heads)]]  # [n, H, d]
            vf_h = vf[:, [self.kv_head(a) for a in range(self.heads)]]
            xs = self.scale * torch.einsum("hbd,nhd->hbn", self.q_land, kf_h)  # [H, m, n]
            self.M = xs.max(dim=-1).values
            e = torch.exp(xs - self.M[..., None])
            self.mass = e.sum(-1)
            self.th = torch.einsum("hbn,nhd->hbd", e, vf_h)
            self.far_empty = False
        # Kept exactly: the sinks and the window [max(ns, p − w + 1), p).
        self.sinks_k, self.sinks_v = keys[:ns].clone(), values[:ns].clone()
        self.window = Ring(w, self.kv_heads, self.d, torch.float64)
        for j in range(max(ns, p - w + 1), p):
            self.window.write(j, keys[j], values[j])
        self.exact = None
        self.queries = {}
        self.sealed_at = p

    # -- push ---------------------------------------------------------------------------

    def push(self, p: int) -> None:
        """At the start of a step at p after the sealing one: position e = p − w leaves
        the window and, when e ≥ ns, joins the far statistics (an online softmax update,
        equal to recomputing the sums over [ns, p − w] from scratch)."""
        ns, w = self.o1.sinks, self.o1.window
        e = p - w
        if e < ns:
            return
        ke, ve = self.window.read(e, e + 1)
        heads = [self.kv_head(a) for a in range(self.heads)]
        k_h, v_h = ke[0, heads].double(), ve[0, heads].double()  # [H, d]
        x = self.scale * torch.einsum("hbd,hd->hb", self.q_land, k_h)  # [H, m]
        if self.far_empty:
            self.M = x.clone()
            self.mass = torch.ones_like(x)
            self.th = v_h[:, None, :].expand(-1, x.shape[1], -1).clone()
            self.far_empty = False
            return
        new_m = torch.maximum(self.M, x)
        old, add = torch.exp(self.M - new_m), torch.exp(x - new_m)
        self.mass = self.mass * old + add
        self.th = self.th * old[..., None] + add[..., None] * v_h[:, None, :]
        self.M = new_m

    # -- attend -------------------------------------------------------------------------

    def attend(self, p: int, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        """Attention of the row at p (q [H, d]; its current entry k, v [K, d]) over the
        sinks, the window and the far field: z [H, d]."""
        ns, w = self.o1.sinks, self.o1.window
        lo = max(ns, p - w + 1)
        wk, wv = self.window.read(lo, p)
        near_k = torch.cat((self.sinks_k, wk, k[None])).double()  # [n, K, d]
        near_v = torch.cat((self.sinks_v, wv, v[None])).double()
        q = q.double()
        z = torch.empty(self.heads, self.d, dtype=torch.float64)
        off = self.M - self.r  # [H, m]
        for a in range(self.heads):
            c = self.kv_head(a)
            f = self.scale * self.k_land[c] @ q[a]  # [m(i)]
            fmax = f.max()
            u = torch.exp(f - fmax) @ self.mu[a]  # u_b = Σ_i e^{f_i − fmax} mu[i][b]
            if self.o1.rect:
                u = u.clamp_min(0.0)
            s = self.scale * near_k[:, c] @ q[a]  # [n]
            big = s.max()
            if not self.far_empty:
                big = torch.maximum(big, (fmax + off[a]).max())
                g = u * torch.exp(fmax + off[a] - big)
                far = (g * self.mass[a]).sum()
                if far < 0:
                    g, far = torch.zeros_like(g), torch.zeros_like(far)
            else:
                g, far = torch.zeros_like(u), torch.zeros((), dtype=torch.float64)
            es = torch.exp(s - big)
            num = es @ near_v[:, c] + g @ self.th[a]
            z[a] = num / torch.clamp(es.sum() + far, min=1e-30)
        return z
