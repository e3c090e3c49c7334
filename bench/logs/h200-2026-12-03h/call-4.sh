#!/usr/bin/env bash
# Device call of 2026-12-03 (eighth session): the sliced GEMM's join through a buffer
# (this binary) against 988399b (workgroup memory), at the default slicing and with the
# larger config's 512-block products sliced in two (DORY_WGPU_COOP_SLICES=1024,4).
cd "$(dirname "$0")/../../.."  # the repository root
old=bin:.wgpu-carry/dory-988399b
BUDGET=330 SWEEP_TESTS=1 SWEEP_KERNELS=1 SWEEP="defaults $old defaults $old" SWEEP_DEPTHS="0 4096" \
    SWEEP_ARGS="--attention exact" bash bench/wgpu_h200.sh run sweep
echo "== with DORY_WGPU_COOP_SLICES=1024,4"
DORY_WGPU_COOP_SLICES=1024,4 BUDGET=150 SWEEP_KERNELS=1 SWEEP="defaults $old" SWEEP_DEPTHS="0 4096" \
    SWEEP_ARGS="--attention exact" bash bench/wgpu_h200.sh run sweep
