#!/usr/bin/env bash
# Device call of 2026-12-03 (ninth session): mlp_fused.wgsl again, its pieces named and half a down row ahead of the barrier,
# against its two dispatches, both models' projections alone, and
# their pp512 and decode once more.
cd "$(dirname "$0")/../../.."  # the repository root
BUDGET=150 SWEEP_KERNELS=1 SWEEP="defaults" SWEEP_DEPTHS="0" SWEEP_ARGS="--attention exact" \
    bash bench/wgpu_h200.sh run sweep
