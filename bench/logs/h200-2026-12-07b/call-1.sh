#!/usr/bin/env bash
# 2026-12-07, nineteenth session, call 1 (not run: twelve tries found no machine). One
# binary, three settings interleaved: main's defaults (the shaders built with wgpu's runtime
# checks, each reduction counting its subgroup's lanes), DORY_WGPU_CHECKS=0 (without the
# checks), and that with DORY_WGPU_SUBGROUP=1 (the adapter's fixed subgroup size a pipeline
# constant of the reductions); the GPU tests under the last first. Then issue 9's figures; a
# decoded row's attention in fewer, wider chunks (tiles of 128 keys, LANES=2) joined by the
# out projection; the clocks during a long decode (what a call cut short loses last).
# Built with `bench/wgpu_h200.sh build`; carry .gl and .wgpu-carry.
cd "$(dirname "$0")/../../.."  # the repository root
source bench/device_setup.sh
(export DORY_WGPU_CHECKS=0 DORY_WGPU_SUBGROUP=1; call_start)
large=/tmp/wgpu-large  # made by call_start's large_model, in its subshell
tiny=models/dory-tiny
# label, then the variables of the setting.
settings=("checked" "unchecked DORY_WGPU_CHECKS=0" "subgroup DORY_WGPU_CHECKS=0 DORY_WGPU_SUBGROUP=1")
for round in 1 2; do
    for m in "$large 64" "$tiny 128"; do
        for s in "${settings[@]}"; do
            set -- $s
            (label=$1; shift; [ $# = 0 ] || export "$@"; bench_knob $label $dory $m)
        done
    done
done
for s in "${settings[@]}"; do
    set -- $s
    (
        label=$1; shift; [ $# = 0 ] || export "$@"
        bench_run rule-$label $dory $tiny 0 exact kl:0.05 512 128 2 120
        bench_tg $label-4096 $dory $large 4096 exact 512 64 1
        profile_large $label $dory
    )
done
figures
# The attention's chunks: tiles of 128 keys (LANES 2), chunks of at least 128 or 144 keys,
# the partials joined by combine or by the out projection (COMBINE_BYTES).
for round in 1 2; do
    bench_knob default $dory $large 64
    (export DORY_WGPU_ATTEND_LANES=2 DORY_WGPU_ATTEND_PER=128; bench_knob l2-p128 $dory $large 64)
    (export DORY_WGPU_ATTEND_LANES=2 DORY_WGPU_ATTEND_PER=128 DORY_WGPU_COMBINE_BYTES=49152; bench_knob l2-p128-join $dory $large 64)
    (export DORY_WGPU_ATTEND_LANES=2 DORY_WGPU_ATTEND_PER=144 DORY_WGPU_COMBINE_BYTES=49152; bench_knob l2-p144-join $dory $large 64)
    (export DORY_WGPU_ATTEND_PER=64 DORY_WGPU_COMBINE_BYTES=81920; bench_knob l4-p64-join $dory $large 64)
done
# The clocks while a long decode runs (sampled every 100 ms): does a chain of small kernels
# keep the SM and memory clocks up?
for m in $large $tiny; do
    nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,power.draw,utilization.gpu,pstate \
        --format=csv,noheader -lms 100 > $OUT/a/clocks-$(basename $m).txt &
    sampler=$!
    bench_tg clocks $dory $m 0 exact 512 1024 1
    kill $sampler
done
