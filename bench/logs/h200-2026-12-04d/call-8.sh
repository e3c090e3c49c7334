#!/usr/bin/env bash
# Device call of 2026-12-04, fourth session: call 7 found dory-tiny's out projection joining
# the attention's partials on the way in (gemv_combine) its dearest decode kernel on the
# chain (~15 µs a dispatch, against ~5 for a plain projection). Its decode with the join
# in combine's own dispatch (DORY_WGPU_COMBINE_BYTES=0), and with only the sliding layers'
# 12.8 KB joined by the projection (16384), against the defaults (32768), interleaved.
cd "$(dirname "$0")/../../.."  # the repository root
BUDGET=330 SWEEP_DEPTHS="0" SWEEP_ARGS="--attention exact" \
    SWEEP="defaults DORY_WGPU_COMBINE_BYTES=0 DORY_WGPU_COMBINE_BYTES=16384 defaults DORY_WGPU_COMBINE_BYTES=0 DORY_WGPU_COMBINE_BYTES=16384 defaults DORY_WGPU_COMBINE_BYTES=0 DORY_WGPU_COMBINE_BYTES=16384" \
    bash bench/wgpu_h200.sh run sweep
