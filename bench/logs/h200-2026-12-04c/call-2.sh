#!/usr/bin/env bash
# Device call of 2026-12-04, third session: call 1's one-dispatch MLP with m coherent
# (call 1's tests read m unwritten once, at 264 workgroups) and its counters apart. The GPU
# tests (264 workgroups by default), again with 8 and 132; then decode of both models at
# depth 0 with 264 and with two dispatches (0), interleaved, the larger one profiled.
cd "$(dirname "$0")/../../.."  # the repository root
BUDGET=420 SWEEP_TESTS=1 SWEEP_TESTS_ALSO="DORY_WGPU_MLP_GROUPS=8 DORY_WGPU_MLP_GROUPS=132" SWEEP_DEPTHS="0" \
    SWEEP="defaults DORY_WGPU_MLP_GROUPS=0 defaults DORY_WGPU_MLP_GROUPS=0" \
    SWEEP_PROFILE="large,decode,0" \
    bash bench/wgpu_h200.sh run sweep
