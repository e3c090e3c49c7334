#!/usr/bin/env bash
# Device call of 2026-12-04, second session: a decoded row's residual formed from the sums
# the out and down projections leave (gemv.wgsl's put_sums / residual_from_sums). The GPU
# tests (also with the sums off), then decode of both models at depths 0 and 4096 under
# the defaults, with the sums off (DORY_WGPU_FUSE without "sums": the residual's own
# dispatch on the larger config's rows, as before) and the last stop's binary (a6e3b4e),
# twice, interleaved; the larger model's decode profiled by kernel under each.
cd "$(dirname "$0")/../../.."  # the repository root
BUDGET=540 SWEEP_TESTS=1 SWEEP_TESTS_ALSO="DORY_WGPU_FUSE=prep,residual,split,combine" SWEEP_DEPTHS="0 4096" \
    SWEEP_PROFILE="large,decode,0" \
    SWEEP="defaults DORY_WGPU_FUSE=prep,residual,split,combine bin:.wgpu-carry/dory-a6e3b4e defaults DORY_WGPU_FUSE=prep,residual,split,combine bin:.wgpu-carry/dory-a6e3b4e" \
    bash bench/wgpu_h200.sh run sweep
