#!/usr/bin/env bash
# Device call of 2026-12-04: a decoded row's MLP (gate|up with SwiGLU, then down) in one
# dispatch, its down workgroups waiting for m (gemv.wgsl's gemv_mlp, uncommitted: lavapipe's
# model tests fail with it where the residual is formed in it). The GPU tests, then decode of
# both models: the defaults (MLP fused, the residual chained into it on the larger model),
# the MLP fused after the residual's own dispatch, the MLP apart (the last commit's
# defaults), nothing chained; the larger model's decode profiled by kernel.
cd "$(dirname "$0")/../../.."  # the repository root
BUDGET=400 SWEEP_TESTS=1 SWEEP_DEPTHS="0" SWEEP_PROFILE="large,decode,0" \
    SWEEP="defaults DORY_WGPU_FUSE=prep,split,combine,mlp DORY_WGPU_FUSE=prep,residual,split,combine DORY_WGPU_CHAIN=0 defaults DORY_WGPU_FUSE=prep,split,combine,mlp DORY_WGPU_FUSE=prep,residual,split,combine" \
    bash bench/wgpu_h200.sh run sweep
