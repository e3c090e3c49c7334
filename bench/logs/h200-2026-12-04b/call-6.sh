#!/usr/bin/env bash
# Device call of 2026-12-04, second session: the final commit (a6e3b4e's kernels; the new
# tests: the MLP after attend_out, also at hidden 1160, and the residual after the MLP):
# `run quick` (the GPU tests, the kernels in their default shapes, both models' decode and
# prefill, PyTorch at depth 0).
cd "$(dirname "$0")/../../.."  # the repository root
FLOORS=none BUDGET=330 bash bench/wgpu_h200.sh run quick
