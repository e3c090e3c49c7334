"""Small models for the tests: random weights with every vector perturbed, so that a
wrong factor or a swapped scale shows in the logits."""

import torch

from dory import Config, Dory
from dory.model import init_weights


def tiny_config(**over) -> Config:
    raw = {"architecture": "dory", "vocab_size": 97, "hidden": 32, "heads": 8, "kv_heads": 2,
           "head_dim": 16, "ffn": 48, "layers": ["sliding", "full", "sliding"], "passes": 3,
           "window": 5, "bos_token_id": 0, "eos_token_id": 1}
    raw.update(over)
    return Config.from_dict(raw)


def tiny_model(cfg: Config | None = None, seed: int = 0, reparam: bool = True,
               dtype=torch.float64, alpha_gain: float = 6.0) -> Dory:
    cfg = cfg or tiny_config()
    g = torch.Generator().manual_seed(seed)
    model = Dory(cfg, reparam=reparam)
    init_weights(model, g)
    with torch.no_grad():
        for p in model.parameters():
            if p.dim() == 1:
                p.mul_(1 + 0.5 * torch.rand(p.shape, generator=g))
        # Alphas of 0.05 move h little; larger steps make the layers matter in the tests
        # (and make the network chaotic: float32 rounding grows along a decode, so tests
        # against a float32 engine keep alpha_gain at 1).
        for name, p in model.named_parameters():
            if name.endswith("alpha"):
                p.mul_(alpha_gain)
    return model.to(dtype)


def ids(n: int, vocab: int, seed: int = 1) -> list[int]:
    g = torch.Generator().manual_seed(seed)
    return [0] + torch.randint(2, vocab, (n - 1,), generator=g).tolist()
