"""The PyTorch reference for the wgpu decode benchmark (bench/wgpu_h200.sh): one Dory
decoding step (spec §4, exact attention, all passes, no early exit) written for speed on
a CUDA GPU, timed eager and replayed as a CUDA graph. Weights are random (speed does not
depend on them) in the model file's dtype for the projections (f16), f32 elsewhere;
caches are f32, as the engine keeps them. Static shapes: the full layer attends over a
cache of depth + the decoded tokens, masked, so that one captured graph serves every
step.

Usage: python3 bench/wgpu_torch.py CONFIG.json --depth N [--tokens T] [--dtype f16]
Prints one JSON object per mode (eager, cuda_graph) with decode tokens/s.
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

    def rope(self, x, pos):
        # index_select, not indexing by a tensor: no host sync, so a CUDA graph can hold it.
        c, s = self.cos.index_select(0, pos.view(1))[0], self.sin.index_select(0, pos.view(1))[0]
        a, b = x[..., : self.d // 2], x[..., self.d // 2:]
        return torch.cat((a * c - b * s, b * c + a * s), -1)

    def attend(self, L, h, pos):
        H, K, d = self.H, self.K, self.d
        y = torch.nn.functional.linear(h.to(self.dtype), L["qkvg"]).float()
        q, k, v, yg = y.split((H * d, K * d, K * d, H * d))
        q = norm(self.rope(q.view(H, d), pos), self.eps) * L["q_scale"].view(H, d)
        k = norm(self.rope(k.view(K, d), pos), self.eps)
        if L["kind"] == "sliding":
            slot = pos % self.W
            # Ring slot j holds the position ≡ j (mod W) at or before pos.
            seen = pos - (pos - self.ring_pos) % self.W
            mask = seen >= 0
        else:
            slot = pos
            mask = self.slot_pos <= pos
        L["k"].index_copy_(0, slot.view(1), k.view(1, K, d))
        L["v"].index_copy_(0, slot.view(1), v.view(1, K, d))
        qg = q.view(K, 4, d)
        s = torch.einsum("cad,ncd->can", qg, L["k"]) * self.scale
        s = s.masked_fill(~mask, float("-inf"))
        z = torch.einsum("can,ncd->cad", s.softmax(-1), L["v"]).reshape(H * d)
        z = z * torch.sigmoid(yg * L["gate_scale"])
        return torch.nn.functional.linear(z.to(self.dtype), L["out"]).float()

    def residual(self, h, o, alpha):
        nh = norm(h, self.eps)
        return norm(nh + alpha * (norm(o, self.eps) - nh), self.eps)

    def __call__(self, tok, pos):
        x = self.embed.index_select(0, tok.view(1))[0].float()
        h = norm(x + x, self.eps)
        for k in range(self.P):
            for L in self.layers:
                h = self.residual(h, self.attend(L, h, pos), L["attn_alpha"])
                gu = torch.nn.functional.linear(h.to(self.dtype), L["gate_up"]).float()
                gg, u = gu.split(self.F)
                a = gg * L["mlp_gate_scale"]
                m = torch.nn.functional.silu(a) * (u * L["mlp_up_scale"])
                h = self.residual(h, torch.nn.functional.linear(m.to(self.dtype), L["down"]).float(), L["mlp_alpha"])
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
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            for _ in range(3):
                out = step(tok, pos)
        torch.cuda.current_stream().wait_stream(s)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            out = step(tok, pos)
        for _ in range(20):
            graph.replay()
        torch.cuda.synchronize()
        t0 = time.time()
        for i in range(a.tokens):
            pos.fill_(a.depth + i)
            graph.replay()
            # The host needs the logits of each step to sample the next token.
            out.argmax().item()
        graphed = a.tokens / (time.time() - t0)
        print(json.dumps({"torch": torch.__version__, "mode": "cuda_graph", "depth": a.depth, "dtype": a.dtype,
                          "tg_tokens_per_s": graphed}), flush=True)


if __name__ == "__main__":
    main()
