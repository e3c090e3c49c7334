#!/usr/bin/env bash
# 2026-12-07, twentieth session, call 7 (not run: too little device time was left to start a
# machine; build the measuring binary as the comment below says, then run it first): the eighteenth session's call 1d again with main's
# new defaults (the checks off, the subgroup a constant): each decode kernel dispatched with
# no workgroups (DORY_WGPU_EMPTY) and twice in a row (DORY_WGPU_TWICE), with 2b6cf41 plus
# bench/logs/h200-2026-12-07/measure-3-main.patch (.wgpu-carry/dory-measure), so that the
# next session knows which kernels' bodies the knobs shortened and which stay far from
# their floors. Exact, all passes, depth 0, one run each. To build the binary: a worktree of
# main with the patch applied, `cargo build --release --locked -p dory-cli` with a target folder
# of its own (one shared with main's mixes the two builds), its dory stripped
# and gzipped as .wgpu-carry/dory-measure.gz (beside `bench/wgpu_h200.sh build`'s).
cd "$(dirname "$0")/../../.."  # the repository root
source bench/device_setup.sh
large_model
m=.wgpu-carry/dory-measure
empty_twice $m models/dory-tiny 128 attend gemv_combine gemv_glu_residual gemv_residual gemv
empty_twice $m $large 64 attend combine gemv gemv_residual gemv_glu_residual
