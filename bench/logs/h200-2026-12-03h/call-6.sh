#!/usr/bin/env bash
# Device call of 2026-12-03 (eighth session): every GEMM block's sums out through a buffer
# (this binary) against 28eebcf (out through workgroup memory, slices joined in a buffer).
cd "$(dirname "$0")/../../.."  # the repository root
BUDGET=140 SWEEP_TESTS=1 SWEEP_KERNELS=1 SWEEP="defaults bin:.wgpu-carry/dory-28eebcf defaults" \
    SWEEP_DEPTHS="0" SWEEP_ARGS="--attention exact" bash bench/wgpu_h200.sh run sweep
