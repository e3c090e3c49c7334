"""The PyTorch reference for the GPU decode benchmark: one Dory decoding step (spec §4,
exact attention, all passes, no early exit) written for speed on a CUDA GPU, timed eager,
replayed as a CUDA graph, and with each layer compiled by torch.compile (Triton kernels
fused by inductor) inside the replayed CUDA graph: PyTorch's best. Weights are random
(speed does not depend on them) in the model file's dtype for the projections (f16), f32
elsewhere; caches are f32, as the engine keeps them. Static shapes: the full layer attends over a cache of depth + the
decoded tokens, masked, so that one captured graph serves every step.

Usage: python3 bench/wgpu_torch.py CONFIG.json --depth N [--tokens T] [--dtype f16]
Prints one JSON object per mode (eager, cuda_graph, compile_graph) with decode tokens/s.
"""

import argparse
import json
import math
import time

import torch


def rope_tables(max_pos: int, d: int, theta: float, device):
    inv = theta ** (-2.0 * torch.arange(d // 2, dtype=torch.float64) / d)
    ang = torch.arange(max_pos, dtype=torch.float64)[:, None] * inv[None, :]
    return ang.cos().float().to(device), ang.sin().float().to(device)


def norm(x, eps):
    return x * torch.rsqrt((x * x).sum(-1, keepdim=True) + eps)


class Step:
    def __init__(self, cfg: dict, depth: int, tokens: int, dtype, device):
        self.c = cfg
        D, H, K, d, F, V = (cfg[k] for k in ("hidden", "heads", "kv_heads", "head_dim", "ffn", "vocab_size"))
        self.D, self.H, self.K, self.d, self.F, self.V = D, H, K, d, F, V
        self.W, self.P, self.eps = cfg["window"], cfg["passes"], cfg.get("eps", 1e-6)
        self.scale = cfg.get("attn_scale", math.sqrt(d))
        g = torch.Generator(device="cpu").manual_seed(0)

        def mat(n, k):
            return (torch.randn(n, k, generator=g) / math.sqrt(k)).to(device=device, dtype=dtype)

        def vec(n, lo, hi):
            return (lo + (hi - lo) * torch.rand(n, generator=g)).to(device)

        self.embed, self.head, self.head_scale = mat(V, D), mat(V, D), vec(V, 8, 12)
        self.ctx = depth + tokens + 1
        self.layers = []
        for kind in cfg["layers"]:
            slots = self.W if kind == "sliding" else self.ctx
            self.layers.append(dict(
                kind=kind, qkvg=mat(2 * H * d + 2 * K * d, D), out=mat(D, H * d),
                gate_up=mat(2 * F, D), down=mat(D, F), q_scale=vec(H * d, 2, 4), gate_scale=vec(H * d, 0.5, 1.5),
                attn_alpha=vec(D, 0.05, 0.3), mlp_gate_scale=vec(F, 0.5, 1.5), mlp_up_scale=vec(F, 0.5, 1.5),
                mlp_alpha=vec(D, 0.05, 0.3),
                # Caches filled with unit keys, as after `depth` positions.
                k=norm(torch.randn(slots, K, d, generator=g), 1e-6).to(device),
                v=torch.randn(slots, K, d, generator=g).to(device),
            ))
        self.cos, self.sin = rope_tables(self.ctx + 1, d, cfg.get("rope_theta", 10000.0), device)
        self.slot_pos = torch.arange(self.ctx, device=device)
        self.ring_pos = torch.arange(self.W, device=device)
        self.dtype = dtype

    def where(self, L, pos):
        """The cache slot of pos and the mask of the slots it sees."""
        if L["kind"] == "sliding":
            # Ring slot j holds the position ≡ j (mod W) at or before pos.
            seen = pos - (pos - self.ring_pos) % self.W
            return pos % self.W, seen >= 0
        return pos, self.slot_pos <= pos

    def layer(self, h, cos, sin, slot, mask, qkvg, out, gate_up, down, q_scale, gate_scale, attn_alpha,
              mlp_gate_scale, mlp_up_scale, mlp_alpha, kc, vc):
        """One layer (§4) as a function of tensors only, so that torch.compile reuses one
        compiled graph for every layer of a kind."""
        H, K, d, eps = self.H, self.K, self.d, self.eps

        def rope(x):
            a, b = x[..., : d // 2], x[..., d // 2:]
            return torch.cat((a * cos - b * sin, b * cos + a * sin), -1)

        def residual(h, o, alpha):
            nh = norm(h, eps)
            return norm(nh + alpha * (norm(o, eps) - nh), eps)

        y = torch.nn.functional.linear(h.to(self.dtype), qkvg).float()
        q, k, v, yg = y.split((H * d, K * d, K * d, H * d))
        q = norm(rope(q.view(H, d)), eps) * q_scale.view(H, d)
        k = norm(rope(k.view(K, d)), eps)
        kc.index_copy_(0, slot.view(1), k.view(1, K, d))
        vc.index_copy_(0, slot.view(1), v.view(1, K, d))
        s = torch.einsum("cad,ncd->can", q.view(K, 4, d), kc) * self.scale
        s = s.masked_fill(~mask, float("-inf"))
        z = torch.einsum("can,ncd->cad", s.softmax(-1), vc).reshape(H * d)
        z = z * torch.sigmoid(yg * gate_scale)
        h = residual(h, torch.nn.functional.linear(z.to(self.dtype), out).float(), attn_alpha)
        gu = torch.nn.functional.linear(h.to(self.dtype), gate_up).float()
        gg, u = gu.split(self.F)
        m = torch.nn.functional.silu(gg * mlp_gate_scale) * (u * mlp_up_scale)
        return residual(h, torch.nn.functional.linear(m.to(self.dtype), down).float(), mlp_alpha)

    def __call__(self, tok, pos, layer=None):
        layer = layer or self.layer
        x = self.embed.index_select(0, tok.view(1))[0].float()
        h = norm(x + x, self.eps)
        # index_select, not indexing by a tensor: no host sync, so a CUDA graph can hold it.
        cos, sin = self.cos.index_select(0, pos.view(1))[0], self.sin.index_select(0, pos.view(1))[0]
        keys = ("qkvg", "out", "gate_up", "down", "q_scale", "gate_scale", "attn_alpha", "mlp_gate_scale",
                "mlp_up_scale", "mlp_alpha", "k", "v")
        for k in range(self.P):
            for L in self.layers:
                h = layer(h, cos, sin, *self.where(L, pos), *(L[n] for n in keys))
            h = norm(norm(h, self.eps) + x, self.eps) if k + 1 < self.P else norm(h, self.eps)
        return torch.nn.functional.linear(h.to(self.dtype), self.head).float() * self.head_scale


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("config")
    ap.add_argument("--depth", type=int, default=0)
    ap.add_argument("--tokens", type=int, default=64)
    ap.add_argument("--dtype", default="f16", choices=["f16", "bf16", "f32"])
    ap.add_argument("--device", default="cuda", help="cpu only to check the script")
    a = ap.parse_args()
    cfg = json.load(open(a.config))
    dtype = {"f16": torch.float16, "bf16": torch.bfloat16, "f32": torch.float32}[a.dtype]
    dev = torch.device(a.device)
    step = Step(cfg, a.depth, a.tokens, dtype, dev)
    tok = torch.zeros((), dtype=torch.long, device=dev)
    pos = torch.full((), a.depth, dtype=torch.long, device=dev)

    def run_eager(n):
        for i in range(n):
            pos.fill_(a.depth + i)
            step(tok, pos)
        if dev.type == "cuda":
            torch.cuda.synchronize()

    with torch.no_grad():
        # Warm up the clocks (they ramp under load) and the allocator.
        t0 = time.time()
        while time.time() - t0 < 1.0:
            run_eager(4)
        t0 = time.time()
        run_eager(a.tokens)
        eager = a.tokens / (time.time() - t0)
        print(json.dumps({"torch": torch.__version__, "mode": "eager", "depth": a.depth, "dtype": a.dtype,
                          "tg_tokens_per_s": eager}), flush=True)
        if dev.type != "cuda":
            return
        for mode, layer in (("cuda_graph", None), ("compile_graph", torch.compile(step.layer, dynamic=False))):
            rate = graphed(step, tok, pos, a.depth, a.tokens, layer)
            print(json.dumps({"torch": torch.__version__, "mode": mode, "depth": a.depth, "dtype": a.dtype,
                              "tg_tokens_per_s": rate}), flush=True)


def graphed(step, tok, pos, depth, tokens, layer):
    """Decode tokens/s with one step captured as a CUDA graph and replayed."""
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(3):
            out = step(tok, pos, layer)
    torch.cuda.current_stream().wait_stream(s)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        out = step(tok, pos, layer)
    t0 = time.time()
    while time.time() - t0 < 0.5:
        graph.replay()
    torch.cuda.synchronize()
    t0 = time.time()
    for i in range(tokens):
        pos.fill_(depth + i)
        graph.replay()
        # The host needs the logits of each step to sample the next token.
        out.argmax().item()
    return tokens / (time.time() - t0)


if __name__ == "__main__":
    main()
