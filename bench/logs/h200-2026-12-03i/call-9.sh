#!/usr/bin/env bash
# Device call of 2026-12-03 (ninth session): the final commit: the GPU tests, the floors as
# the benchmark tool now writes them (the grid barrier written once, the tensor ceiling from
# the GEMM step's probe), both models' projections alone and their pp512 and decode.
cd "$(dirname "$0")/../../.."  # the repository root
BUDGET=150 SWEEP_TESTS=1 SWEEP_KERNELS=1 SWEEP="defaults" SWEEP_DEPTHS="0" SWEEP_ARGS="--attention exact" \
    bash bench/wgpu_h200.sh run sweep
