"""Every golden case of shared/fixtures (copied into the repository's tests/fixtures, which
the engine replays too) replayed in float64 within spec §8, passes equal step by step,
whatever the prompt's chunk size."""

from pathlib import Path

import pytest

from dory.fixtures import replay

CASES = sorted(p for p in (Path(__file__).resolve().parents[2] / "tests" / "fixtures").iterdir() if (p / "case.json").exists())


def test_every_case_is_here():
    # The fixtures README lists seven cases; a lost folder must not shrink the suite silently.
    assert {c.name for c in CASES} >= {"exact-decode", "exit-kl", "exit-confidence", "o1-seal-far",
                                        "continued-exact", "rope-full-false", "bf16-weights"}


@pytest.mark.parametrize("chunk", [None, 1, 5], ids=["whole", "chunk1", "chunk5"])
@pytest.mark.parametrize("case", CASES, ids=lambda p: p.name)
def test_replay(case, chunk):
    result = replay(case, chunk=chunk)
    assert not result.failures, "\n".join(result.failures)
    # A float64 replay agrees with the float32-rounded expectations to ~1e-7 (README).
    assert max(result.worst.values()) < 1e-6, result.worst
