#!/usr/bin/env bash
# 2026-12-07, twentieth session, call 5: main's kernels shapes again, now that the reductions
# unroll and the checks are gone (b725e8f's binary): the projections' bands, the attention's
# lanes, loads in flight and chunks, the tensor-core GEMM's tiles; the larger config's
# pp512 + tg64 and dory-tiny's tg128 under its rule, interleaved two rounds.
cd "$(dirname "$0")/../../.."  # the repository root
source bench/device_setup.sh
large_model
tiny=models/dory-tiny
knobs=("default" "bands3 DORY_WGPU_GEMV_BANDS=3" "bands1 DORY_WGPU_GEMV_BANDS=1" "lanes8 DORY_WGPU_ATTEND_LANES=8"
    "ahead4 DORY_WGPU_ATTEND_AHEAD=4" "per64 DORY_WGPU_ATTEND_PER=64" "tile21 DORY_WGPU_COOP_TILE=2,1"
    "tile22 DORY_WGPU_COOP_TILE=2,2")
for round in 1 2; do
    for k in "${knobs[@]}"; do
        set -- $k
        (label=$1; shift; [ $# = 0 ] || export "$@"; bench_knob $label $dory $large 64)
    done
    for k in "${knobs[@]:0:5}"; do
        set -- $k
        (label=$1; shift; [ $# = 0 ] || export "$@"; bench_run rule-$label $dory $tiny 0 exact kl:0.05 512 128 2 120)
    done
done
