#!/usr/bin/env bash
# Third device call of the sixth session of 2026-12-04 (branch attend-coop-direct). Build
# with `bench/wgpu_h200.sh build` and carry .gl and .wgpu-carry.
# attend_coop.wgsl's diagnostic forms (DORY_WGPU_COOP_VARIANT): which are right (the GPU
# tests, whose third device runs it, under 0, 1: maxima first and no rescale, 2: no value
# scales, 3: both), and where its time goes (the larger config's pp512 at 4096, profiled,
# under 0, 1, 8: no storage barrier, 16: no value sums, 32: no scores, 48: neither).
cd "$(dirname "$0")/../../.."  # the repository root
c=DORY_WGPU_ATTEND_COOP=1+DORY_WGPU_COOP_VARIANT
BUDGET=420 SWEEP_TESTS=1 SWEEP_DEPTHS="4096" SWEEP_ARGS="--attention exact" SWEEP_PROFILE="4096" \
    SWEEP_TESTS_ALSO="DORY_WGPU_COOP_VARIANT=1 DORY_WGPU_COOP_VARIANT=2 DORY_WGPU_COOP_VARIANT=3" \
    SWEEP="defaults $c=0 $c=1 $c=8 $c=16 $c=32 $c=48" \
    bash bench/wgpu_h200.sh run sweep
