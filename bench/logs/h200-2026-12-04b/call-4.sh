#!/usr/bin/env bash
# Device call of 2026-12-04, second session: a decoded row's chunks of attention joined by
# the last chunk to finish (attend.wgsl's LAST), not by combine's dispatch. The GPU tests
# (also with DORY_WGPU_ATTEND_LAST=0), then decode of both models at depths 0, 4096 and
# 32768 under the defaults and DORY_WGPU_ATTEND_LAST=0 (combine's dispatch, as before),
# twice, interleaved; the larger model's decode at depth 4096 profiled under each.
cd "$(dirname "$0")/../../.."  # the repository root
BUDGET=540 SWEEP_TESTS=1 SWEEP_TESTS_ALSO="DORY_WGPU_ATTEND_LAST=0" SWEEP_DEPTHS="0 4096 32768" \
    SWEEP_PROFILE="large,decode,4096" \
    SWEEP="defaults DORY_WGPU_ATTEND_LAST=0 defaults DORY_WGPU_ATTEND_LAST=0" \
    bash bench/wgpu_h200.sh run sweep
