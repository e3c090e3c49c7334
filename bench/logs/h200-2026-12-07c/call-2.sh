#!/usr/bin/env bash
# 2026-12-07, twentieth session, call 2 (after call 1, same binary): issue 9's figures,
# then a decoded row's attention in fewer, wider chunks (tiles of 128 keys, LANES=2) joined
# by combine or the out projection, then the clocks during a long decode.
cd "$(dirname "$0")/../../.."  # the repository root
source bench/device_setup.sh
large=/tmp/wgpu-large
tiny=models/dory-tiny
figures
for round in 1 2; do
    bench_knob default $dory $large 64
    (export DORY_WGPU_ATTEND_LANES=2 DORY_WGPU_ATTEND_PER=128; bench_knob l2-p128 $dory $large 64)
    (export DORY_WGPU_ATTEND_LANES=2 DORY_WGPU_ATTEND_PER=128 DORY_WGPU_COMBINE_BYTES=49152; bench_knob l2-p128-join $dory $large 64)
    (export DORY_WGPU_ATTEND_LANES=2 DORY_WGPU_ATTEND_PER=144 DORY_WGPU_COMBINE_BYTES=49152; bench_knob l2-p144-join $dory $large 64)
    (export DORY_WGPU_ATTEND_PER=64 DORY_WGPU_COMBINE_BYTES=81920; bench_knob l4-p64-join $dory $large 64)
done
for m in $large $tiny; do
    nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,power.draw,utilization.gpu,pstate \
        --format=csv,noheader -lms 100 > $OUT/a/clocks-$(basename $m).txt &
    sampler=$!
    bench_tg clocks $dory $m 0 exact 512 1024 1
    kill $sampler
done
