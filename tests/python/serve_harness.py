"""What the `dory serve` tests share: skipping (or, under CI, failing) when something
is missing, a random model's config, and a server process on a free loopback port.

A module of its own, not conftest.py, so that test modules can import it by a name no
other test suite of the repository uses.
"""

import os
import re
import subprocess
import threading
import time
from pathlib import Path

import pytest
import requests


# The Rust tests' random model: 400 ids, a sliding and a full layer, 3 passes.
TINY_CONFIG = {
    "architecture": "dory",
    "vocab_size": 400,
    "hidden": 32,
    "heads": 4,
    "kv_heads": 1,
    "head_dim": 16,
    "ffn": 64,
    "layers": ["sliding", "full"],
    "passes": 3,
    "window": 8,
    "max_context": 2048,
}


def in_ci():
    return os.environ.get("CI", "").lower() in ("1", "true", "yes")


def missing(why):
    """Skips a test that cannot run here, except under CI, where it fails."""
    if in_ci():
        pytest.fail(f"{why} (CI=true: not skipping)")
    pytest.skip(why)


class Server:
    """A `dory serve` process; `url` is its base address."""

    def __init__(self, dory_bin, model, *args):
        cmd = [dory_bin, "serve", "--model", str(model), "--host", "127.0.0.1", "--port", "0", *args]
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        # The server prints its address once it listens; a server that never does is
        # killed, so that a broken start fails the test instead of hanging it.
        timer = threading.Timer(120, self.proc.kill)
        timer.start()
        line = self.proc.stdout.readline()
        timer.cancel()
        found = re.search(r"http://[\d.]+:\d+", line)
        if not found:
            self.proc.kill()
            _, err = self.proc.communicate()
            raise RuntimeError(f"`{' '.join(cmd)}` did not start: {line!r} {err}")
        self.url = found.group(0)
        self.pid = self.proc.pid
        # Drain stderr so that a chatty server never blocks on a full pipe.
        threading.Thread(target=self.proc.stderr.read, daemon=True).start()
        deadline = time.time() + 30
        while requests.get(f"{self.url}/health", timeout=5).status_code != 200:
            assert time.time() < deadline, "/health never answered 200"
            time.sleep(0.1)

    def memory(self):
        """Resident and peak resident bytes of the server process (Linux)."""
        status = Path(f"/proc/{self.pid}/status").read_text()
        field = lambda name: int(re.search(rf"^{name}:\s+(\d+) kB", status, re.M).group(1)) * 1024
        return {"rss": field("VmRSS"), "peak_rss": field("VmHWM")}

    def stop(self):
        self.proc.terminate()
        try:
            self.proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
