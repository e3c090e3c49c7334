"""Writes a model folder (spec §2) from a training checkpoint, or re-packs a folder.

    python train/export.py checkpoint RUN/ckpt.pt OUT --tokenizer train/data/tokenizer.json
    python train/export.py repack SRC OUT [--shard-mb 15]     # shards ⇄ one model.safetensors

Every re-parametrisation is folded into the effective tensors (weights.effective): the
engine reads them literally. --exit sets the config's default early-exit rule.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from dory import Config, Dory, load, save  # noqa: E402
from dory.weights import check, read_tensors, write_tensors  # noqa: E402


def from_checkpoint(ckpt: Path, out: Path, dtype: str, shard_mb: float, tokenizer: Path | None,
                    exit_rule: dict | None) -> None:
    state = torch.load(ckpt, map_location="cpu", weights_only=False)
    raw = state["config"]
    if exit_rule is not None:
        raw = {**raw, "exit": exit_rule}
    cfg = Config.from_dict(raw)
    model = Dory(cfg, reparam=True)
    model.load_state_dict(state["model"])
    save(model, out, dtype, int(shard_mb * 1e6) if shard_mb else None)
    if tokenizer is not None:
        shutil.copy(tokenizer, out / "tokenizer.json")


def repack(src: Path, out: Path, shard_mb: float) -> None:
    """The same tensors, bit for bit, as one file or as shards."""
    cfg = Config.load(src)
    tensors = read_tensors(src)
    check(cfg, tensors)
    out.mkdir(parents=True, exist_ok=True)
    if src.resolve() != out.resolve():
        shutil.copy(src / "config.json", out / "config.json")
        if (src / "tokenizer.json").exists():
            shutil.copy(src / "tokenizer.json", out / "tokenizer.json")
    write_tensors(tensors, out, int(shard_mb * 1e6) if shard_mb else None)
    load(out)  # proves the result loads


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="command", required=True)
    c = sub.add_parser("checkpoint", help="a trainer checkpoint → a model folder")
    c.add_argument("ckpt", type=Path)
    c.add_argument("out", type=Path)
    c.add_argument("--dtype", choices=["bf16", "f16", "f32"], default="bf16")
    c.add_argument("--shard-mb", type=float, default=0)
    c.add_argument("--tokenizer", type=Path)
    c.add_argument("--exit", type=json.loads, help='e.g. \'{"criterion": "kl", "threshold": 0.01, "min_passes": 2}\'')
    r = sub.add_parser("repack", help="a model folder → one file (no --shard-mb) or shards")
    r.add_argument("src", type=Path)
    r.add_argument("out", type=Path)
    r.add_argument("--shard-mb", type=float, default=0)
    a = ap.parse_args(argv)
    if a.command == "checkpoint":
        from_checkpoint(a.ckpt, a.out, a.dtype, a.shard_mb, a.tokenizer, a.exit)
    else:
        repack(a.src, a.out, a.shard_mb)


if __name__ == "__main__":
    main()
