#!/usr/bin/env bash
# 2026-12-07, nineteenth session, call 1. Two binaries: `old` (24168e2: the shaders built
# without wgpu's runtime checks, DORY_WGPU_CHECKS=1 builds them with, as main did before)
# and this commit's `dory` (also the adapter's fixed subgroup size a pipeline constant of
# the reductions), interleaved; issue 9's figures; then a decoded row's attention in
# fewer, wider chunks (tiles of 128 keys, LANES=2) joined by the out projection; the clocks
# during a long decode (what a call cut short loses last). Built with `bench/wgpu_h200.sh build 24168e2`; carry .gl and
# .wgpu-carry.
cd "$(dirname "$0")/../../.."  # the repository root
source bench/device_setup.sh
call_start
old=.wgpu-carry/dory-24168e2
tiny=models/dory-tiny
for round in 1 2; do
    for m in "$large 64" "$tiny 128"; do
        bench_knob checked $old $m DORY_WGPU_CHECKS 1
        bench_knob unchecked $old $m
        bench_knob subgroup $dory $m
    done
done
for b in "checked $old" "unchecked $old" "subgroup $dory"; do
    set -- $b
    (
        [ $1 = checked ] && export DORY_WGPU_CHECKS=1
        bench_run rule-$1 $2 $tiny 0 exact kl:0.05 512 128 2 120
        bench_tg $1-4096 $2 $large 4096 exact 512 64 1
        profile_large $1 $2
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
