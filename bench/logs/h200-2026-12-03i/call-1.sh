#!/usr/bin/env bash
# Device call of 2026-12-03 (ninth session): the GPU tests (matmul::cut had run only on
# lavapipe), then the floors with the GEMM step's probe (peak_steps.wgsl: fragments held,
# from workgroup memory, from the buffer, staged), and both models' projections alone.
cd "$(dirname "$0")/../../.."  # the repository root
BUDGET=200 SWEEP_TESTS=1 SWEEP_KERNELS=1 SWEEP="defaults" SWEEP_DEPTHS="0" SWEEP_ARGS="--attention exact" \
    bash bench/wgpu_h200.sh run sweep
