#!/usr/bin/env bash
# Device call of 2026-12-04: a decoded row's wide residual chained into the projection after
# it (gemv.wgsl RES = 2). The GPU tests (also with every residual chained), then decode of
# both models under the defaults (chained), DORY_WGPU_CHAIN=0 (the residual's own dispatch,
# as before), DORY_WGPU_RESIDUAL_K=0 (dory-tiny's narrow rows chained too) and the last
# stop's binary, interleaved, with the larger model's decode profiled by kernel.
cd "$(dirname "$0")/../../.."  # the repository root
BUDGET=420 SWEEP_TESTS=1 SWEEP_TESTS_ALSO="DORY_WGPU_RESIDUAL_K=0" SWEEP_DEPTHS="0" \
    SWEEP_PROFILE="large,decode,0" \
    SWEEP="defaults DORY_WGPU_CHAIN=0 DORY_WGPU_RESIDUAL_K=0 bin:.wgpu-carry/dory-7035cb8 defaults DORY_WGPU_CHAIN=0 DORY_WGPU_RESIDUAL_K=0" \
    bash bench/wgpu_h200.sh run sweep
