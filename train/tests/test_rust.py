"""export → Rust load → same logits: the `dory` binary named by DORY_BIN generates
greedily from a model this package exported (and from the shipped model), and every row of
its logits must match the float64 Session within spec §8 (1e-5, exact mode), with the same
tokens. A greedy near-tie (top-2 gap < 1e-2) may legitimately flip between two correct
implementations (§8): the rows after one are not compared, and the test says so."""

import os
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
import torch

from dory import Session, load, save
from dory import tokenizer as toks
from dory.fixtures import rel_err
from helpers import tiny_config, tiny_model

DORY_BIN = os.environ.get("DORY_BIN")
pytestmark = pytest.mark.skipif(
    not DORY_BIN, reason="DORY_BIN is unset: set it to the `dory` binary to compare its logits with this oracle")

HERE = Path(__file__).parent
SHIPPED = HERE.parent.parent / "models" / "dory-tiny"
TIE = 1e-2


def rust_generate(model: Path, prompt: str, steps: int, tmp: Path):
    out = tmp / "rust.npy"
    cmd = [DORY_BIN, "generate", "--model", str(model), "--temperature", "0",
           "--max-tokens", str(steps), "--logits", str(out), prompt]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, f"{' '.join(cmd)} failed:\n{done.stderr}"
    return np.load(out), np.load(tmp / "rust.tokens.npy")


def compare(model_dir: Path, prompt: str, steps: int, tmp: Path) -> int:
    """Returns the rows compared; fails on any row beyond 1e-5 or a token that differs
    without a near-tie."""
    got, tokens = rust_generate(model_dir, prompt, steps, tmp)
    assert got.dtype == np.float32 and tokens.dtype == np.int32
    assert got.shape == (len(tokens), load(model_dir).cfg.vocab_size)
    model = load(model_dir, torch.float64)
    session = Session(model)
    want = session.prompt(toks.encode(toks.load(model_dir), prompt), bos=True)[-1]
    for i, token in enumerate(tokens.tolist()):
        err = rel_err(torch.from_numpy(got[i]), want)
        assert err <= 1e-5, f"row {i}: relative error {err:.3g} > 1e-5"
        top2 = torch.topk(want, 2).values
        if int(torch.argmax(want)) != token:
            gap = float(top2[0] - top2[1])
            assert gap < TIE, f"row {i}: Rust sampled {token}, the oracle's argmax is {int(torch.argmax(want))} (gap {gap:.3g})"
            print(f"row {i}: greedy near-tie (gap {gap:.2g}) flipped; later rows not compared")
            return i + 1
        if i + 1 < len(tokens):
            want, _ = session.step(token)
    return len(tokens)


def test_exported_tiny_model(tmp_path):
    model = tiny_model(tiny_config(vocab_size=264), reparam=True, alpha_gain=1.0)
    with torch.no_grad():
        model.head_scale.mul_(30.0)  # wide logit gaps, so that greedy ties are rare
    folder = tmp_path / "model"
    save(model, folder, "bf16")
    shutil.copy(HERE.parent.parent / "tests/fixtures/exact-decode/model/tokenizer.json", folder / "tokenizer.json")
    assert compare(folder, "the cat sat on the mat", 24, tmp_path) >= 8


@pytest.mark.skipif(not (SHIPPED / "model.safetensors").exists(), reason="models/dory-tiny is not there")
def test_shipped_model(tmp_path):
    assert compare(SHIPPED, "Once upon a time", 16, tmp_path) >= 8
