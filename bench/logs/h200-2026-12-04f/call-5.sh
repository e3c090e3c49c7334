#!/usr/bin/env bash
# Fifth device call of the sixth session of 2026-12-04: `dory bench` with the last token not
# running ahead, against 50e36a6, interleaved three times at depth 0 (the GPU tests first).
# Build with `bench/wgpu_h200.sh build 50e36a6` and carry .gl and .wgpu-carry.
cd "$(dirname "$0")/../../.."  # the repository root
old=.wgpu-carry/dory-50e36a6
BUDGET=240 SWEEP_TESTS=1 SWEEP_DEPTHS="0" SWEEP_ARGS="--attention exact" \
    SWEEP="defaults bin:$old defaults bin:$old defaults bin:$old" \
    bash bench/wgpu_h200.sh run sweep
