"""The Dory model: its parameters, the layer of spec §4, and the parallel forward.

One set of modules serves both forms. `Layer.run(h, cos, sin, attend)` is §4's layer with
the attention's key selection left to `attend`; the parallel forward here (training, and
the first segment of a session) passes the causal or sliding softmax of `attention.py`,
and `session.py` (step-wise decoding, O(1) mode) passes its caches.

Parameters carry the spec's tensor names (`layers.3.attn.q`, …). Weight matrices are
stored as they are used (the trainer renormalises them along the embedding dimension after
every step, as nGPT does). The learnable vectors use nGPT's re-parametrisation: a stored
value s and a constant factor c, effective value c·s; `effective()` folds c in, which is
what the exporter writes, and a model loaded from a folder has every c = 1.
"""

from __future__ import annotations

import math

import torch
import torch.nn as nn

from .attention import decode_mask, masked_attention, window_mask
from .config import Config
from .ops import norm, residual, rope_tables, rotate

ALPHA_INIT = 0.05  # nGPT's initial residual step (alpha_attn, alpha_mlp)


class Scaled(nn.Module):
    """Shared plumbing of the learnable vectors: `eff(name)` = stored · factor."""

    factors: dict[str, float]

    def _vector(self, name: str, n: int, effective_init: float, stored_init: float,
                reparam: bool) -> None:
        # With reparam, the stored value starts at stored_init and the factor maps it to
        # effective_init: Adam's step on the stored value is then scaled by the factor,
        # which is nGPT's way of giving each vector its own learning rate.
        factor = effective_init / stored_init if reparam else 1.0
        start = stored_init if reparam else effective_init
        self.register_parameter(name, nn.Parameter(torch.full((n,), float(start))))
        self.factors[name] = factor

    def eff(self, name: str) -> torch.Tensor:
        return getattr(self, name) * self.factors[name]


class Attention(Scaled):
    def __init__(self, cfg: Config, reparam: bool):
        super().__init__()
        self.factors = {}
        d, hd, kd = cfg.hidden, cfg.heads * cfg.head_dim, cfg.kv_heads * cfg.head_dim
        self.q = nn.Parameter(torch.empty(hd, d))
        self.k = nn.Parameter(torch.empty(kd, d))
        self.v = nn.Parameter(torch.empty(kd, d))
        self.gate = nn.Parameter(torch.empty(hd, d))
        self.out = nn.Parameter(torch.empty(d, hd))
        base = 1 / math.sqrt(d)
        # q_scale: nGPT's s_qk (effective 1). gate_scale: like nGPT's s_v, a stored 1
        # times √D, so that σ's argument starts O(1) although (Wgate h)_i ~ 1/√D.
        self._vector("q_scale", hd, 1.0, base, reparam)
        self._vector("gate_scale", hd, math.sqrt(d), 1.0, reparam)
        self._vector("alpha", d, ALPHA_INIT, base, reparam)
        self.cfg = cfg
        self.dropout = 0.0  # training only: on o before the residual; not part of the spec

    def prepare(self, h, cos, sin):
        """Projections, rotation, unit heads and the query scale: q [.., T, H, d],
        k and v [.., T, K, d], the gate's input yg [.., T, H·d]."""
        c = self.cfg
        w = torch.cat((self.q, self.k, self.v, self.gate))
        y = h @ w.t()
        hd, kd = c.heads * c.head_dim, c.kv_heads * c.head_dim
        yq, yk, yv, yg = y.split((hd, kd, kd, hd), dim=-1)
        yq = yq.unflatten(-1, (c.heads, c.head_dim))
        yk = yk.unflatten(-1, (c.kv_heads, c.head_dim))
        if cos is not None:
            yq, yk = rotate(yq, cos, sin), rotate(yk, cos, sin)
        q = norm(yq, c.eps) * self.eff("q_scale").view(c.heads, c.head_dim).to(yq.dtype)
        k = norm(yk, c.eps)
        v = yv.unflatten(-1, (c.kv_heads, c.head_dim))
        return q, k, v, yg

    def finish(self, h, z, yg):
        """The gate, the output projection and the nGPT residual."""
        g = torch.sigmoid(yg.to(h.dtype) * self.eff("gate_scale"))
        o = (z.flatten(-2).to(h.dtype) * g) @ self.out.t()
        o = torch.nn.functional.dropout(o, self.dropout, self.training)
        return residual(h, o, self.eff("alpha"), self.cfg.eps)


class Mlp(Scaled):
    def __init__(self, cfg: Config, reparam: bool):
        super().__init__()
        self.factors = {}
        d, f = cfg.hidden, cfg.ffn
        self.gate = nn.Parameter(torch.empty(f, d))
        self.up = nn.Parameter(torch.empty(f, d))
        self.down = nn.Parameter(torch.empty(d, f))
        # nGPT's s_v (times √D, for the same reason as the attention gate) and s_u.
        self._vector("gate_scale", f, math.sqrt(d), 1.0, reparam)
        self._vector("up_scale", f, 1.0, 1.0, reparam)
        self._vector("alpha", d, ALPHA_INIT, 1 / math.sqrt(d), reparam)
        self.eps = cfg.eps
        self.dropout = 0.0  # as Attention's

    def forward(self, h):
        y = h @ torch.cat((self.gate, self.up)).t()
        yg, yu = y.to(h.dtype).chunk(2, dim=-1)
        m = torch.nn.functional.silu(yg * self.eff("gate_scale")) * (yu * self.eff("up_scale"))
        o = torch.nn.functional.dropout(m @ self.down.t(), self.dropout, self.training)
        return residual(h, o, self.eff("alpha"), self.eps)


class Layer(nn.Module):
    def __init__(self, cfg: Config, kind: str, reparam: bool):
        super().__init__()
        self.kind = kind
        self.attn = Attention(cfg, reparam)
        self.mlp = Mlp(cfg, reparam)
        self.window = cfg.window if kind == "sliding" else None
        self.rope = kind == "sliding" or cfg.rope_full
        self.scale = cfg.scale

    def run(self, h, cos, sin, attend):
        """§4's layer; attend(q, k, v) -> z [.., T, H, d] chooses the visible keys."""
        if not self.rope:
            cos = sin = None
        q, k, v, yg = self.attn.prepare(h, cos, sin)
        z = attend(q, k, v)
        return self.mlp(self.attn.finish(h, z, yg))

    def forward(self, h, cos, sin, mask, k_final=None, v_final=None):
        """The parallel form under `mask` (attention.py); with k_final/v_final, the decode
        regime, whose mask spans [final entries; current entries]. Returns the new h and
        this pass's keys and values (which a decode-regime forward reads next time)."""
        kv = []

        def attend(q, k, v):
            kv.append((k, v))
            if k_final is not None:
                k = torch.cat((k_final.to(k.dtype), k), dim=1)
                v = torch.cat((v_final.to(v.dtype), v), dim=1)
            dt = _attention_dtype(q)
            return masked_attention(q.to(dt), k.to(dt), v.to(dt), mask, self.scale)

        h = self.run(h, cos, sin, attend)
        return h, kv[0][0], kv[0][1]


def _attention_dtype(q):
    if torch.is_autocast_enabled(q.device.type):
        return torch.get_autocast_dtype(q.device.type)
    return q.dtype


class Dory(Scaled):
    def __init__(self, cfg: Config, reparam: bool = False):
        super().__init__()
        self.factors = {}
        self.cfg = cfg
        self.reparam = reparam
        self.embed = nn.Parameter(torch.empty(cfg.vocab_size, cfg.hidden))
        self.head = nn.Parameter(torch.empty(cfg.vocab_size, cfg.hidden))
        # nGPT's s_z: the logits start as cosines (effective scale 1) and sharpen as it grows.
        self._vector("head_scale", cfg.vocab_size, 1.0, 1 / math.sqrt(cfg.hidden), reparam)
        self.layers = nn.ModuleList(Layer(cfg, kind, reparam) for kind in cfg.layers)

    # -- the loop's edges (spec §4; the seed's mix modes) ----------------------------

    def enter(self, x):
        """Mode 0: s = x, h = N(s + x)."""
        return norm(x + x, self.cfg.eps)

    def between(self, h, x):
        """Mode 1 (and a read-out's modes 3+4): s = N(h), h = N(s + x). Returns (s, h)."""
        s = norm(h, self.cfg.eps)
        return s, norm(s + x, self.cfg.eps)

    def leave(self, h):
        """Mode 2: h = N(h) after the last pass."""
        return norm(h, self.cfg.eps)

    def logits(self, h_unit):
        """head_scale ⊙ (head · h) of a unit state (mode 2's N(h) or a read-out's s)."""
        return (h_unit @ self.head.t()).to(self.head_scale.dtype) * self.eff("head_scale")

    def rope(self, positions: torch.Tensor, dtype: torch.dtype):
        return rope_tables(positions, self.cfg.head_dim, self.cfg.rope_theta, dtype)

    # -- the parallel forward --------------------------------------------------------

    def forward(self, ids: torch.Tensor, passes: int | None = None, readouts: bool = False,
                final_kv: list | None = None, layer_fns=None, every_pass_kv: bool = False):
        """ids [B, T] from position 0. Returns (states, kv).

        states: the unit states to read out, [B, T, D] each: after every pass with
        readouts, else after the last only. Per-pass logits are `logits(state)`, and pass
        k's read-out equals a model of k passes (the first k passes do not depend on P);
        the caller applies `logits`, so that a trainer can fuse it with its loss.
        kv: the last pass's per-layer (k, v), or with every_pass_kv one such list per pass.
        final_kv: per-layer (k, v) of an earlier forward's last pass: every pass then runs
        in the decode regime. layer_fns: compiled stand-ins for the layers' forward.
        """
        passes = passes or self.cfg.passes
        t = ids.shape[1]
        dtype = self.embed.dtype
        cos, sin = self.rope(torch.arange(t, device=ids.device),
                             torch.float64 if dtype == torch.float64 else torch.float32)
        make = window_mask if final_kv is None else decode_mask
        masks = {kind: make(t, self.cfg.window if kind == "sliding" else None, ids.device)
                 for kind in set(self.cfg.layers)}
        fns = layer_fns or list(self.layers)
        x = self.embed[ids]
        h = self.enter(x)
        states, kv, kvs = [], [], []
        for k in range(1, passes + 1):
            kv = []
            kvs.append(kv)
            for i, fn in enumerate(fns):
                kf, vf = final_kv[i] if final_kv is not None else (None, None)
                h, kk, vv = fn(h, cos, sin, masks[self.cfg.layers[i]], kf, vf)
                kv.append((kk, vv))
            if k < passes:
                s, h = self.between(h, x)
                if readouts:
                    states.append(s)
        states.append(self.leave(h))
        return states, (kvs if every_pass_kv else kv)


def init_weights(model: Dory, generator: torch.Generator | None = None) -> None:
    """nGPT's start: normal(0, 0.02) matrices, then unit along the embedding dimension."""
    with torch.no_grad():
        for name, p in model.named_parameters():
            if p.dim() == 2:
                p.normal_(0.0, 0.02, generator=generator)
    renormalize(model)


def embedding_dim(name: str) -> int:
    """The axis of a weight matrix that runs along the embedding (hidden) dimension:
    the input axis of embed, head and the projections that read h; the output axis of
    attn.out and mlp.down, which write into h."""
    return 0 if name.endswith("attn.out") or name.endswith("mlp.down") else 1


@torch.no_grad()
def renormalize(model: nn.Module) -> None:
    """nGPT: every weight matrix back to unit vectors along the embedding dimension."""
    for name, p in model.named_parameters():
        if p.dim() == 2:
            p.div_(p.norm(dim=embedding_dim(name), keepdim=True).clamp_min(1e-12))
