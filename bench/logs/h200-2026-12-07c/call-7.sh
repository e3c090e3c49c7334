#!/usr/bin/env bash
# 2026-12-07, twentieth session, call 7 (not run: too little device time was left to start a
# machine; for the next session's first call): the eighteenth session's call 1d again with
# main's new defaults (the checks off, the subgroup a constant): each decode kernel
# dispatched with no workgroups (DORY_WGPU_EMPTY) and twice in a row (DORY_WGPU_TWICE), so
# that the next session knows which kernels' bodies the knobs shortened and which stay far
# from their floors. Exact, all passes, depth 0, one run each. The binary: main plus
# bench/logs/h200-2026-12-07/measure-3-main.patch, built with
#   bash bench/wgpu_h200.sh build $(git rev-parse --short HEAD) bench/logs/h200-2026-12-07/measure-3-main.patch
# (carry .gl and .wgpu-carry).
cd "$(dirname "$0")/../../.."  # the repository root
source bench/device_setup.sh
large_model
m=$(ls .wgpu-carry/dory-*-measure-3-main | head -1)
empty_twice $m models/dory-tiny 128 attend gemv_combine gemv_glu_residual gemv_residual gemv
empty_twice $m $large 64 attend combine gemv gemv_residual gemv_glu_residual
