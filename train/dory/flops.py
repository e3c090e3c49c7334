"""Model FLOPs per token, for the trainer's MFU (useful work only: the masked half of
causal attention and the recomputation of nothing are not counted)."""

from __future__ import annotations

from .config import Config

# Dense bf16 peak of an H100/H200 SXM by the vendor's datasheet; MFU is quoted against it.
H200_BF16_PEAK = 989e12


def layer_matmul(cfg: Config) -> int:
    """Multiply-adds per token of one layer's projections."""
    d, f = cfg.hidden, cfg.ffn
    hd, kd = cfg.heads * cfg.head_dim, cfg.kv_heads * cfg.head_dim
    return d * (2 * hd + 2 * kd) + hd * d + 3 * f * d


def mean_keys(kind: str, cfg: Config, seq: int) -> float:
    """Keys a row sees on average over a window of `seq` rows starting at position 0."""
    if kind == "full":
        return (seq + 1) / 2
    w = cfg.window
    return sum(min(i + 1, w) for i in range(seq)) / seq


def forward_per_token(cfg: Config, seq: int, passes: int, readouts: int = 1,
                      decode_regime: bool = False) -> float:
    """Forward FLOPs per token of a `passes`-pass parallel forward with `readouts` head
    products. The decode regime adds one key per row (its own current entry)."""
    per_pass = 0.0
    for kind in cfg.layers:
        keys = mean_keys(kind, cfg, seq) + (1 if decode_regime else 0)
        per_pass += 2 * layer_matmul(cfg) + 4 * cfg.heads * cfg.head_dim * keys
    return passes * per_pass + readouts * 2 * cfg.vocab_size * cfg.hidden


def train_step_per_token(cfg: Config, seq: int, passes: int, readouts: int,
                         decode_iters: int = 0) -> float:
    """Forward + backward (3× forward) of the step, plus the no-grad forwards that give
    the decode regime its final-pass keys."""
    f = 3 * forward_per_token(cfg, seq, passes, readouts, decode_regime=decode_iters > 0)
    if decode_iters:
        f += forward_per_token(cfg, seq, passes, 0) + \
            (decode_iters - 1) * forward_per_token(cfg, seq, passes, 0, decode_regime=True)
    return f
