#!/usr/bin/env bash
# Device call of 2026-12-04, fourth session: a decoded row's attention with a tile's keys and
# values loaded at once (the first tile's before the prologue) and combine's loads all before
# its first reduction (this commit), against fce10a7 (the attention as it was), interleaved
# three times; the GPU tests first (also with 2 × 2 GEMM subgroups).
cd "$(dirname "$0")/../../.."  # the repository root
BUDGET=450 SWEEP_TESTS=1 SWEEP_DEPTHS="0 4096" SWEEP_ARGS="--attention exact" \
    SWEEP="defaults bin:.wgpu-carry/dory-fce10a7 defaults bin:.wgpu-carry/dory-fce10a7 defaults bin:.wgpu-carry/dory-fce10a7" \
    bash bench/wgpu_h200.sh run sweep
