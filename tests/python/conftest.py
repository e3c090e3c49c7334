"""Fixtures of the `dory serve` tests: the binary, a random model, server processes.

The binary comes from $DORY_BIN (scripts/test.sh sets it to the release build). Without
it the tests skip when run by hand, and fail under CI=true, where skipping would hide
that nothing was tested.
"""

import json
import os
import subprocess

import pytest

from serve_harness import TINY_CONFIG, Server, missing


@pytest.fixture(scope="session")
def dory_bin():
    path = os.environ.get("DORY_BIN")
    if not path:
        missing("DORY_BIN is not set: build with `cargo build --release` and set DORY_BIN=target/release/dory")
    if not os.access(path, os.X_OK):
        pytest.fail(f"DORY_BIN={path} is not an executable file")
    return path


@pytest.fixture(scope="session")
def tiny_model(dory_bin, tmp_path_factory):
    """A random model whose config has no end-of-sequence token, so that every
    generation runs to max_tokens and token counts are exact."""
    root = tmp_path_factory.mktemp("model")
    config = root / "config.json"
    config.write_text(json.dumps(TINY_CONFIG))
    out = root / "tiny"
    subprocess.run([dory_bin, "init", "--config", str(config), "--seed", "3", "--out", str(out)], check=True,
                   capture_output=True)
    written = json.loads((out / "config.json").read_text())
    written.pop("eos_token_id", None)
    (out / "config.json").write_text(json.dumps(written))
    return out


@pytest.fixture(scope="session")
def server(dory_bin, tiny_model):
    s = Server(dory_bin, tiny_model, "--backend", "cpu", "--parallel", "2")
    yield s
    s.stop()


@pytest.fixture(scope="session")
def start_server(dory_bin):
    """Starts servers with their own options; stops them all at the end."""
    started = []

    def start(model, *args):
        s = Server(dory_bin, model, *args)
        started.append(s)
        return s

    yield start
    for s in started:
        s.stop()
