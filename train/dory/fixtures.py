"""Replaying a golden case of shared/fixtures (see its README): the model, the ids, the
expected logits and passes, and the comparison of spec §8."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import torch
from safetensors.torch import load_file

from .config import O1, Exit
from .session import Session
from .weights import load


def rel_err(got: torch.Tensor, want: torch.Tensor) -> float:
    """‖got − want‖₂ / ‖want‖₂ in float64."""
    got, want = got.detach().double(), want.detach().double()
    return float((got - want).norm() / want.norm())


@dataclass
class Replay:
    """Worst relative error per part, and every row that broke its bound."""

    case: str
    worst: dict[str, float] = field(default_factory=dict)
    failures: list[str] = field(default_factory=list)

    def check(self, part: str, row: int, position: int, got, want, bound: float) -> None:
        e = rel_err(got, want)
        self.worst[part] = max(self.worst.get(part, 0.0), e)
        if not e <= bound:
            self.failures.append(f"{self.case} {part} row {row} (position {position}): "
                                 f"relative error {e:.3g} > {bound:g}")


def replay(folder: str | Path, chunk: int | None = None) -> Replay:
    """Feeds a case through a float64 Session exactly as the fixtures README says."""
    folder = Path(folder)
    case = json.loads((folder / "case.json").read_text())
    want = load_file(str(folder / "expected.safetensors"))
    model = load(folder / "model", torch.float64)
    o1 = O1(**case["o1"]) if case["o1"] else None
    ex = Exit(**case["exit"]) if case["exit"] else Exit("none")
    session = Session(model, attention=case["attention"], o1=o1, exit=ex)
    seal = case.get("seal_pos")
    result = Replay(case["name"])

    def bound(position: int) -> float:
        if seal is not None and position < seal:
            return case["tolerance_before_seal"]
        return case["tolerance"]

    def run(prompt_key, prefill_key, steps_key, step_key, passes_key):
        start = session.pos
        rows = session.prompt(case[prompt_key], chunk=chunk)
        for r in range(rows.shape[0]):
            result.check(prefill_key, r, start + r, rows[r], want[prefill_key][r], bound(start + r))
        for i, token in enumerate(case[steps_key]):
            p = session.pos
            logits, passes = session.step(token)
            result.check(step_key, i, p, logits, want[step_key][i], bound(p))
            expected = int(want[passes_key][i])
            if passes != expected:
                result.failures.append(f"{result.case} {step_key} {i} (position {p}): "
                                       f"{passes} passes, expected {expected}")

    run("prompt", "prefill_logits", "steps", "step_logits", "passes")
    if case["prompt2"] is not None:
        run("prompt2", "prefill2_logits", "steps2", "step2_logits", "passes2")
    return result
