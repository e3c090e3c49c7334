#!/usr/bin/env bash
# 2026-12-07, nineteenth session, call 1: the shaders built without wgpu's runtime checks
# (the new default; DORY_WGPU_CHECKS=1 builds them with), A/B in one binary, interleaved;
# then a decoded row's attention in fewer, wider chunks (tiles of 128 keys, LANES=2) joined
# by the out projection; then issue 9's figures. Built with `bench/wgpu_h200.sh build`;
# carry .gl and .wgpu-carry.
cd "$(dirname "$0")/../../.."  # the repository root
source bench/device_setup.sh
call_start
tiny=models/dory-tiny
for round in 1 2; do
    bench_knob unchecked $dory $large 64
    bench_knob checked $dory $large 64 DORY_WGPU_CHECKS 1
    bench_knob unchecked $dory $tiny 128
    bench_knob checked $dory $tiny 128 DORY_WGPU_CHECKS 1
done
bench_run rule-unchecked $dory $tiny 0 exact kl:0.05 512 128 2 120
(export DORY_WGPU_CHECKS=1; bench_run rule-checked $dory $tiny 0 exact kl:0.05 512 128 2 120)
bench_tg unchecked-4096 $dory $large 4096 exact 512 64 1
(export DORY_WGPU_CHECKS=1; bench_tg checked-4096 $dory $large 4096 exact 512 64 1)
profile_large unchecked $dory
(export DORY_WGPU_CHECKS=1; profile_large checked $dory)
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
figures
