#!/usr/bin/env bash
# Device call of 2026-12-03 (eighth session): the stop's figures (`run quick`: the GPU
# tests, decode and prefill of both models, 988399b carried beside for an A/B, PyTorch),
# then the larger products sliced in four (DORY_WGPU_COOP_SLICES=2048,4) against the
# new default of two.
cd "$(dirname "$0")/../../.."  # the repository root
FLOORS=none BUDGET=290 bash bench/wgpu_h200.sh run quick
echo "== slices by a target of 2048"
BUDGET=110 SWEEP="DORY_WGPU_COOP_SLICES=2048,4 defaults" SWEEP_DEPTHS="0" SWEEP_ARGS="--attention exact" \
    bash bench/wgpu_h200.sh run sweep
