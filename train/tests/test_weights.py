"""Export folds the re-parametrisation into the spec's tensors: export → reload gives the
same logits; shards load as one file does; a broken file names the tensor."""

import json

import pytest
import torch
from safetensors.torch import load_file, save_file

from dory import Session, WeightsError, load, save
from dory.fixtures import rel_err
from dory.weights import effective, shapes
from helpers import ids, tiny_config, tiny_model


def logits(model, tokens):
    return Session(model).prompt(tokens)


def test_export_reload_same_logits_f32(tmp_path):
    model = tiny_model(reparam=True)  # stored values ≠ effective values
    assert any(f != 1.0 for f in model.layers[0].attn.factors.values())
    save(model, tmp_path, "f32")
    again = load(tmp_path, torch.float64)
    tokens = ids(15, 97)
    assert rel_err(logits(again, tokens), logits(model, tokens)) < 1e-6  # f32 rounding only


def test_export_reload_bf16_is_exactly_the_rounded_model(tmp_path):
    model = tiny_model(reparam=True)
    save(model, tmp_path, "bf16")
    stored = load_file(str(tmp_path / "model.safetensors"))
    assert all(t.dtype == torch.bfloat16 for t in stored.values())
    rounded = tiny_model(reparam=False)
    rounded.load_state_dict({k: v.to(torch.bfloat16).double() for k, v in effective(model).items()})
    tokens = ids(15, 97)
    assert torch.equal(logits(load(tmp_path), tokens), logits(rounded, tokens))


def test_shards_load_like_one_file(tmp_path):
    model = tiny_model()
    save(model, tmp_path / "one", "bf16")
    save(model, tmp_path / "shards", "bf16", shard_bytes=20_000)
    index = json.loads((tmp_path / "shards/model.safetensors.index.json").read_text())
    assert len(set(index["weight_map"].values())) > 1
    assert not (tmp_path / "shards/model.safetensors").exists()
    tokens = ids(9, 97)
    assert torch.equal(logits(load(tmp_path / "one"), tokens), logits(load(tmp_path / "shards"), tokens))


@pytest.mark.parametrize("breakage, message", [
    (lambda t: t.pop("layers.1.mlp.up"), "layers.1.mlp.up: missing"),
    (lambda t: t.update({"extra.bias": torch.zeros(3)}), "extra.bias: not a tensor"),
    (lambda t: t.update({"head_scale": torch.zeros(5)}), "head_scale: shape"),
    (lambda t: t["layers.0.attn.q"].__setitem__((0, 0), float("nan")), "layers.0.attn.q: holds a non-finite"),
])
def test_broken_weights_name_the_tensor(tmp_path, breakage, message):
    save(tiny_model(), tmp_path, "f32")
    t = load_file(str(tmp_path / "model.safetensors"))
    breakage(t)
    save_file(t, str(tmp_path / "model.safetensors"))
    with pytest.raises(WeightsError, match=message):
        load(tmp_path)


def test_shapes_cover_every_parameter():
    model = tiny_model(tiny_config())
    assert {k: tuple(v.shape) for k, v in model.state_dict().items()} == shapes(model.cfg)
