#!/usr/bin/env bash
# Device call of 2026-12-03 (ninth session): gemm_staged again, a stage's steps pasted
# (gemm_stage_step.wgsl) where call 2's kernel looped over them: the GPU tests under each
# shape, both models' projections alone and pp512 under each, against the direct kernel.
cd "$(dirname "$0")/../../.."  # the repository root
s="DORY_WGPU_COOP_STAGE=2,2,2 DORY_WGPU_COOP_STAGE=1,2,2 DORY_WGPU_COOP_STAGE=1,4,2"
BUDGET=250 SWEEP_TESTS=1 SWEEP_TESTS_ALSO="$s" SWEEP_KERNELS=1 SWEEP="defaults $s" SWEEP_DEPTHS="0" \
    SWEEP_ARGS="--attention exact" bash bench/wgpu_h200.sh run sweep
