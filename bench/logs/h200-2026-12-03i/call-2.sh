#!/usr/bin/env bash
# Device call of 2026-12-03 (ninth session): the GEMM's operands staged in workgroup memory
# (gemm_staged, DORY_WGPU_COOP_STAGE=STEPS,WM,WN, for the unsliced products) against the
# direct kernel: the GPU tests under each shape, the floors (peak_steps.wgsl now also
# staging 2 and 3 steps a barrier), both models' projections alone and pp512 under each.
cd "$(dirname "$0")/../../.."  # the repository root
s="DORY_WGPU_COOP_STAGE=2,2,2 DORY_WGPU_COOP_STAGE=1,2,2 DORY_WGPU_COOP_STAGE=1,4,2 DORY_WGPU_COOP_STAGE=1,2,4"
BUDGET=330 SWEEP_TESTS=1 SWEEP_TESTS_ALSO="$s" SWEEP_KERNELS=1 SWEEP="defaults $s defaults" SWEEP_DEPTHS="0" \
    SWEEP_ARGS="--attention exact" bash bench/wgpu_h200.sh run sweep
