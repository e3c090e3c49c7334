"""config.json (spec §2): what loads, and that each broken rule names its field."""

import json

import pytest

from dory import Config, ConfigError

BASE = {"architecture": "dory", "vocab_size": 264, "hidden": 32, "heads": 8, "kv_heads": 2,
        "head_dim": 16, "ffn": 64, "layers": ["sliding", "full"], "passes": 3, "window": 4}


def test_defaults_and_round_trip(tmp_path):
    cfg = Config.from_dict({**BASE, "hf_extra": 1})
    assert cfg.rope_theta == 10000.0 and cfg.rope_full and cfg.eps == 1e-6
    assert cfg.scale == 4.0  # √d
    assert cfg.o1 is None and cfg.exit is None
    cfg.save(tmp_path)
    again = Config.load(tmp_path)
    assert again == cfg and json.loads((tmp_path / "config.json").read_text())["hf_extra"] == 1


def test_o1_defaults():
    cfg = Config.from_dict({**BASE, "o1": {}})
    o = cfg.o1
    assert (o.sinks, o.window, o.landmarks, o.stride, o.rect, o.rcond) == (4, 512, 32, 8, True, 1e-4)
    assert o.seal_position == 4 + 512 + 8 * 32


@pytest.mark.parametrize("change, field", [
    ({"architecture": "llama"}, "architecture"),
    ({"vocab_size": None}, "vocab_size"),
    ({"hidden": 30}, "hidden"),
    ({"heads": 6}, "heads"),
    ({"head_dim": 12}, "head_dim"),
    ({"head_dim": 264}, "head_dim"),
    ({"ffn": 66}, "ffn"),
    ({"layers": []}, "layers"),
    ({"layers": ["sliding", "global"]}, "layers"),
    ({"passes": 0}, "passes"),
    ({"passes": 2.0}, "passes"),
    ({"window": None}, "window"),
    ({"eps": -1}, "eps"),
    ({"bos_token_id": 264}, "bos_token_id"),
    ({"o1": {"landmarks": 33}}, "o1.landmarks"),
    ({"o1": {"rcond": 1.0}}, "o1.rcond"),
    ({"o1": {"sinks": 4, "stride": 8, "landmarks": 32, "seal_at": 100}}, "o1.seal_at"),
    ({"exit": {"criterion": "kl"}}, "exit.threshold"),
    ({"exit": {"criterion": "entropy", "threshold": 1}}, "exit.criterion"),
    ({"exit": {"criterion": "kl", "threshold": 0.1, "min_passes": 0}}, "exit.min_passes"),
])
def test_broken_rules_name_the_field(change, field):
    raw = {**BASE, **change}
    raw = {k: v for k, v in raw.items() if v is not None}
    with pytest.raises(ConfigError, match=f"^{field.replace('.', '[.]')}:"):
        Config.from_dict(raw)
