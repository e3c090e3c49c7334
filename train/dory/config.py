"""config.json of a Dory model folder (spec §2): parsing, validation and writing.

Every rule of §2's table is checked here, and a broken rule is a ConfigError that names
the field and the rule, so that a bad folder fails at load and never half-way through a
forward pass.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field, asdict
from pathlib import Path
from typing import Any

LAYER_KINDS = ("sliding", "full")
EXIT_CRITERIA = ("none", "kl", "confidence")


class ConfigError(ValueError):
    """A config.json that breaks a rule of spec §2."""


@dataclass(frozen=True)
class O1:
    """Settings of the O(1) full layer (spec §6)."""

    sinks: int = 4
    window: int = 512
    landmarks: int = 32
    stride: int = 8
    rect: bool = True
    rcond: float = 1e-4
    seal_at: int | None = None  # None: the default ns + w + stride·m

    @property
    def seal_position(self) -> int:
        if self.seal_at is not None:
            return self.seal_at
        return self.sinks + self.window + self.stride * self.landmarks


@dataclass(frozen=True)
class Exit:
    """The early-exit rule of decoding (spec §5)."""

    criterion: str = "none"
    threshold: float = 0.0
    min_passes: int = 1


@dataclass(frozen=True)
class Config:
    vocab_size: int
    hidden: int
    heads: int
    kv_heads: int
    head_dim: int
    ffn: int
    layers: tuple[str, ...]
    passes: int
    window: int
    rope_theta: float = 10000.0
    rope_full: bool = True
    attn_scale: float | None = None  # None: √head_dim
    eps: float = 1e-6
    bos_token_id: int | list[int] | None = None
    eos_token_id: int | list[int] | None = None
    max_context: int | None = None
    o1: O1 | None = None
    exit: Exit | None = None
    extras: dict[str, Any] = field(default_factory=dict, compare=False)

    @property
    def scale(self) -> float:
        """λ, the softmax scale that multiplies q·k."""
        return self.attn_scale if self.attn_scale is not None else math.sqrt(self.head_dim)

    @property
    def bos(self) -> int | None:
        """The id prepended to a session's first segment (the first one of a list)."""
        b = self.bos_token_id
        return b[0] if isinstance(b, list) else b

    @property
    def eos_ids(self) -> list[int]:
        e = self.eos_token_id
        return [] if e is None else (list(e) if isinstance(e, list) else [e])

    def with_passes(self, passes: int) -> "Config":
        """The same model read out after `passes` passes (used for per-pass perplexity)."""
        d = self.to_dict()
        d["passes"] = passes
        return Config.from_dict(d)

    # -- reading -------------------------------------------------------------------

    @staticmethod
    def load(path: str | Path) -> "Config":
        p = Path(path)
        if p.is_dir():
            p = p / "config.json"
        try:
            raw = json.loads(p.read_text())
        except FileNotFoundError:
            raise ConfigError(f"{p}: no config.json") from None
        except json.JSONDecodeError as e:
            raise ConfigError(f"{p}: not valid JSON: {e}") from None
        return Config.from_dict(raw)

    @staticmethod
    def from_dict(raw: dict[str, Any]) -> "Config":
        if not isinstance(raw, dict):
            raise ConfigError("config: must be a JSON object")
        arch = raw.get("architecture")
        if arch is None:
            raise ConfigError("architecture: required field is missing")
        if arch != "dory":
            raise ConfigError(f"architecture: must be \"dory\", got {arch!r}")

        vocab = _int(raw, "vocab_size", lo=1)
        hidden = _int(raw, "hidden", lo=1)
        if hidden % 4:
            raise ConfigError(f"hidden: must be a multiple of 4, got {hidden}")
        heads = _int(raw, "heads", lo=1)
        kv_heads = _int(raw, "kv_heads", lo=1)
        if heads != 4 * kv_heads:
            raise ConfigError(f"heads: must equal 4·kv_heads ({4 * kv_heads}), got {heads}")
        head_dim = _int(raw, "head_dim", lo=8, hi=256)
        if head_dim % 8:
            raise ConfigError(f"head_dim: must be a multiple of 8, got {head_dim}")
        ffn = _int(raw, "ffn", lo=1)
        if ffn % 4:
            raise ConfigError(f"ffn: must be a multiple of 4, got {ffn}")
        layers = raw.get("layers")
        if layers is None:
            raise ConfigError("layers: required field is missing")
        if not isinstance(layers, list) or not layers:
            raise ConfigError("layers: must be a non-empty list (L ≥ 1)")
        for i, kind in enumerate(layers):
            if kind not in LAYER_KINDS:
                raise ConfigError(f"layers: entry {i} must be \"sliding\" or \"full\", got {kind!r}")
        passes = _int(raw, "passes", lo=1)
        window = _int(raw, "window", lo=1)
        rope_theta = _num(raw, "rope_theta", default=10000.0, positive=True)
        rope_full = _bool(raw, "rope_full", default=True)
        attn_scale = _num(raw, "attn_scale", default=None, positive=True)
        eps = _num(raw, "eps", default=1e-6, positive=True)
        bos = _ids(raw, "bos_token_id", vocab)
        eos = _ids(raw, "eos_token_id", vocab)
        max_context = _int(raw, "max_context", lo=1) if raw.get("max_context") is not None else None

        o1 = None
        if raw.get("o1") is not None:
            o1 = _o1(raw["o1"])
        ex = None
        if raw.get("exit") is not None:
            ex = _exit(raw["exit"])

        known = set(Config.__dataclass_fields__) | {"architecture"}
        extras = {k: v for k, v in raw.items() if k not in known}
        return Config(vocab, hidden, heads, kv_heads, head_dim, ffn, tuple(layers), passes,
                      window, rope_theta, rope_full, attn_scale, eps, bos, eos, max_context,
                      o1, ex, extras)

    # -- writing -------------------------------------------------------------------

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"architecture": "dory"}
        for k in ("vocab_size", "hidden", "heads", "kv_heads", "head_dim", "ffn"):
            d[k] = getattr(self, k)
        d["layers"] = list(self.layers)
        d["passes"] = self.passes
        d["window"] = self.window
        d["rope_theta"] = self.rope_theta
        d["rope_full"] = self.rope_full
        if self.attn_scale is not None:
            d["attn_scale"] = self.attn_scale
        d["eps"] = self.eps
        for k in ("bos_token_id", "eos_token_id", "max_context"):
            if getattr(self, k) is not None:
                d[k] = getattr(self, k)
        if self.o1 is not None:
            o = asdict(self.o1)
            if o["seal_at"] is None:
                del o["seal_at"]
            d["o1"] = o
        if self.exit is not None:
            d["exit"] = asdict(self.exit)
        d.update(self.extras)
        return d

    def save(self, folder: str | Path) -> None:
        Path(folder, "config.json").write_text(json.dumps(self.to_dict(), indent=2) + "\n")


def _int(raw: dict, name: str, lo: int | None = None, hi: int | None = None,
         default: int | None = None, where: str = "") -> int:
    label = where + name
    if name not in raw or raw[name] is None:
        if default is not None:
            return default
        raise ConfigError(f"{label}: required field is missing")
    v = raw[name]
    # JSON integers only: 4.0 or true are not integers (§2).
    if isinstance(v, bool) or not isinstance(v, int):
        raise ConfigError(f"{label}: must be a JSON integer, got {v!r}")
    if lo is not None and v < lo:
        raise ConfigError(f"{label}: must be ≥ {lo}, got {v}")
    if hi is not None and v > hi:
        raise ConfigError(f"{label}: must be ≤ {hi}, got {v}")
    return v


def _num(raw: dict, name: str, default, positive: bool = False, where: str = ""):
    label = where + name
    if name not in raw or raw[name] is None:
        return default
    v = raw[name]
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
        raise ConfigError(f"{label}: must be a finite number, got {v!r}")
    if positive and v <= 0:
        raise ConfigError(f"{label}: must be > 0, got {v}")
    return float(v)


def _bool(raw: dict, name: str, default: bool, where: str = "") -> bool:
    if name not in raw or raw[name] is None:
        return default
    v = raw[name]
    if not isinstance(v, bool):
        raise ConfigError(f"{where}{name}: must be true or false, got {v!r}")
    return v


def _ids(raw: dict, name: str, vocab: int):
    v = raw.get(name)
    if v is None:
        return None
    items = v if isinstance(v, list) else [v]
    if not items:
        raise ConfigError(f"{name}: must be a token id or a non-empty list of ids")
    for t in items:
        if isinstance(t, bool) or not isinstance(t, int) or not 0 <= t < vocab:
            raise ConfigError(f"{name}: ids must be JSON integers in [0, {vocab}), got {t!r}")
    return v


def _o1(raw: Any) -> O1:
    if not isinstance(raw, dict):
        raise ConfigError("o1: must be an object")
    w = "o1."
    ns = _int(raw, "sinks", lo=0, default=4, where=w) if "sinks" in raw else 4
    win = _int(raw, "window", lo=1, where=w) if "window" in raw else 512
    m = _int(raw, "landmarks", lo=1, hi=32, where=w) if "landmarks" in raw else 32
    stride = _int(raw, "stride", lo=1, where=w) if "stride" in raw else 8
    rect = _bool(raw, "rect", default=True, where=w)
    rcond = _num(raw, "rcond", default=1e-4, where=w)
    if not 0 < rcond < 1:
        raise ConfigError(f"o1.rcond: must be in (0, 1), got {rcond}")
    seal_at = None
    if raw.get("seal_at") is not None:
        seal_at = _int(raw, "seal_at", lo=ns + stride * m, where=w)
    return O1(ns, win, m, stride, rect, rcond, seal_at)


def _exit(raw: Any) -> Exit:
    if not isinstance(raw, dict):
        raise ConfigError("exit: must be an object")
    crit = raw.get("criterion", "none")
    if crit not in EXIT_CRITERIA:
        raise ConfigError(f"exit.criterion: must be one of {', '.join(EXIT_CRITERIA)}, got {crit!r}")
    if crit != "none" and raw.get("threshold") is None:
        raise ConfigError(f"exit.threshold: required when the criterion is {crit!r}")
    tau = _num(raw, "threshold", default=0.0, where="exit.")
    if tau < 0:
        raise ConfigError(f"exit.threshold: must be ≥ 0, got {tau}")
    k = _int(raw, "min_passes", lo=1, where="exit.") if "min_passes" in raw else 1
    return Exit(crit, tau, k)
