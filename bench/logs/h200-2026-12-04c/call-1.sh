#!/usr/bin/env bash
# Device call of 2026-12-04, third session: a decoded row's MLP in one dispatch of
# persistent workgroups that take gate|up items, then down items, from queues (mlp.wgsl).
# The GPU tests (264 workgroups by default; the shared-reduction device runs 3, the other
# order two dispatches), again with 132; then decode of both models at depth 0 with 264,
# two dispatches (0), 528 and 132 workgroups, interleaved.
cd "$(dirname "$0")/../../.."  # the repository root
BUDGET=420 SWEEP_TESTS=1 SWEEP_TESTS_ALSO="DORY_WGPU_MLP_GROUPS=132" SWEEP_DEPTHS="0" \
    SWEEP="defaults DORY_WGPU_MLP_GROUPS=0 DORY_WGPU_MLP_GROUPS=528 defaults DORY_WGPU_MLP_GROUPS=0 DORY_WGPU_MLP_GROUPS=132" \
    SWEEP_PROFILE="large,decode,0" \
    bash bench/wgpu_h200.sh run sweep
