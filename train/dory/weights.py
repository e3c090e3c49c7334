"""model.safetensors of spec §2: the tensor table, loading (single file or hub-style
shards), validation, and writing a model folder."""

from __future__ import annotations

import json
from pathlib import Path

import torch
from safetensors import safe_open
from safetensors.torch import save_file

from .config import Config
from .model import Dory

INDEX = "model.safetensors.index.json"
DTYPES = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16}


class WeightsError(ValueError):
    """A model.safetensors that breaks spec §2's table."""


def shapes(cfg: Config) -> dict[str, tuple[int, ...]]:
    """Every tensor a model of `cfg` has, with its shape (spec §2)."""
    v, d, f = cfg.vocab_size, cfg.hidden, cfg.ffn
    hd, kd = cfg.heads * cfg.head_dim, cfg.kv_heads * cfg.head_dim
    out = {"embed": (v, d), "head": (v, d), "head_scale": (v,)}
    for i in range(len(cfg.layers)):
        a, m = f"layers.{i}.attn.", f"layers.{i}.mlp."
        out.update({a + "q": (hd, d), a + "k": (kd, d), a + "v": (kd, d), a + "gate": (hd, d),
                    a + "out": (d, hd), a + "q_scale": (hd,), a + "gate_scale": (hd,),
                    a + "alpha": (d,),
                    m + "gate": (f, d), m + "up": (f, d), m + "down": (d, f),
                    m + "gate_scale": (f,), m + "up_scale": (f,), m + "alpha": (d,)})
    return out


def read_tensors(folder: str | Path) -> dict[str, torch.Tensor]:
    """All tensors of a folder's model.safetensors, or of the shards its index lists."""
    folder = Path(folder)
    single = folder / "model.safetensors"
    index = folder / INDEX
    if single.exists():
        files = [single]
    elif index.exists():
        try:
            weight_map = json.loads(index.read_text())["weight_map"]
        except (json.JSONDecodeError, KeyError, TypeError) as e:
            raise WeightsError(f"{index}: not a safetensors index with a weight_map ({e})") from None
        files = [folder / name for name in sorted(set(weight_map.values()))]
    else:
        raise WeightsError(f"{folder}: neither model.safetensors nor {INDEX}")
    tensors: dict[str, torch.Tensor] = {}
    for path in files:
        if not path.exists():
            raise WeightsError(f"{path}: shard listed by the index is missing")
        with safe_open(str(path), framework="pt") as f:
            for name in f.keys():
                if name in tensors:
                    raise WeightsError(f"{name}: stored twice (in {path.name} again)")
                tensors[name] = f.get_tensor(name)
    return tensors


def check(cfg: Config, tensors: dict[str, torch.Tensor]) -> None:
    """A missing or extra tensor, a wrong shape, dtype or a non-finite value is an error
    that names the tensor."""
    want = shapes(cfg)
    for name in tensors:
        if name not in want:
            raise WeightsError(f"{name}: not a tensor of this model (spec §2)")
    for name, shape in want.items():
        if name not in tensors:
            raise WeightsError(f"{name}: missing")
        t = tensors[name]
        if tuple(t.shape) != shape:
            raise WeightsError(f"{name}: shape {list(t.shape)}, expected {list(shape)}")
        if t.dtype not in DTYPES.values():
            raise WeightsError(f"{name}: dtype {t.dtype}, expected F32, F16 or BF16")
        if not torch.isfinite(t).all():
            raise WeightsError(f"{name}: holds a non-finite value")


def load(folder: str | Path, dtype: torch.dtype = torch.float64) -> Dory:
    """A model folder as a Dory of effective tensors (no re-parametrisation), widened to
    `dtype` (exact from F32, F16 and BF16 into float32 or float64)."""
    cfg = Config.load(folder)
    tensors = read_tensors(folder)
    check(cfg, tensors)
    model = Dory(cfg, reparam=False)
    model.load_state_dict({k: v.to(dtype) for k, v in tensors.items()}, strict=True)
    return model.to(dtype).eval()


def effective(model: Dory) -> dict[str, torch.Tensor]:
    """The spec's tensors of a model: matrices as they are, vectors with their nGPT
    factor folded in, so that the formulas of §4 read them literally."""
    out = {}
    for name, p in model.named_parameters():
        owner, _, leaf = name.rpartition(".")
        mod = model.get_submodule(owner) if owner else model
        factor = getattr(mod, "factors", {}).get(leaf, 1.0)
        out[name] = (p.detach().double() * factor)
    return out


def save(model: Dory, folder: str | Path, dtype: str = "bf16",
         shard_bytes: int | None = None) -> None:
    """Writes config.json and the effective tensors in `dtype`, as one model.safetensors
    or, when they exceed shard_bytes, as hub-style shards with an index."""
    if dtype not in DTYPES:
        raise ValueError(f"dtype must be one of {', '.join(DTYPES)}, got {dtype!r}")
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    tensors = {k: v.to(DTYPES[dtype]).contiguous().cpu() for k, v in effective(model).items()}
    check(model.cfg, tensors)
    model.cfg.save(folder)
    write_tensors(tensors, folder, shard_bytes)


def write_tensors(tensors: dict[str, torch.Tensor], folder: Path, shard_bytes: int | None) -> None:
    for stale in list(folder.glob("model-*-of-*.safetensors")) + [folder / INDEX, folder / "model.safetensors"]:
        stale.unlink(missing_ok=True)
    total = sum(t.numel() * t.element_size() for t in tensors.values())
    meta = {"format": "pt"}
    if shard_bytes is None or total <= shard_bytes:
        save_file(tensors, str(folder / "model.safetensors"), metadata=meta)
        return
    shards: list[dict[str, torch.Tensor]] = [{}]
    size = 0
    for name, t in tensors.items():
        n = t.numel() * t.element_size()
        if shards[-1] and size + n > shard_bytes:
            shards.append({})
            size = 0
        shards[-1][name] = t
        size += n
    weight_map = {}
    for i, part in enumerate(shards):
        fname = f"model-{i + 1:05d}-of-{len(shards):05d}.safetensors"
        save_file(part, str(folder / fname), metadata=meta)
        weight_map.update({name: fname for name in part})
    index = {"metadata": {"total_size": total}, "weight_map": weight_map}
    (folder / INDEX).write_text(json.dumps(index, indent=2) + "\n")
