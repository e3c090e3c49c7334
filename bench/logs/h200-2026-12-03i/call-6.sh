#!/usr/bin/env bash
# Device call of 2026-12-03 (ninth session): the floors with a barrier across resident workgroups (grid_sync.wgsl)
# and the L2 probe again, both models' projections alone, and
# their pp512 and decode once more.
cd "$(dirname "$0")/../../.."  # the repository root
BUDGET=150 SWEEP_KERNELS=1 SWEEP="defaults" SWEEP_DEPTHS="0" SWEEP_ARGS="--attention exact" \
    bash bench/wgpu_h200.sh run sweep
