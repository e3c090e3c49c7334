#!/usr/bin/env bash
# Device call of 2026-12-04: the final commit (7035cb8's kernels; the MLP op test now runs
# twice): `run quick` (the GPU tests, the kernels in their default shapes, both models' decode
# and prefill, PyTorch at depth 0), then the larger config at depth 32768 (exact).
cd "$(dirname "$0")/../../.."  # the repository root
FLOORS=none BUDGET=330 bash bench/wgpu_h200.sh run quick
BUDGET=120 SWEEP="defaults" SWEEP_DEPTHS="32768" SWEEP_ARGS="--attention exact" bash bench/wgpu_h200.sh run sweep
