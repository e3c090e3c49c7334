#!/usr/bin/env bash
# 2026-12-07, twentieth session, call 6 (run as one command line on the warm machine after
# call 5): attend.wgsl with 8 lanes a key (tiles of 32 keys) against the default 4, three
# rounds at depth 0 (with 4 loads in flight too), two at 4096, and dory-tiny under its rule.
cd "$(dirname "$0")/../../.."  # the repository root
source bench/device_setup.sh
large=/tmp/wgpu-large; [ -d $large ] || large_model
for r in 1 2 3; do
    bench_knob default $dory $large 64
    bench_knob lanes8 $dory $large 64 DORY_WGPU_ATTEND_LANES 8
    (export DORY_WGPU_ATTEND_LANES=8 DORY_WGPU_ATTEND_AHEAD=4; bench_knob lanes8-ahead4 $dory $large 64)
done
for r in 1 2; do
    bench_tg default-4096 $dory $large 4096 exact 512 64 1
    (export DORY_WGPU_ATTEND_LANES=8; bench_tg lanes8-4096 $dory $large 4096 exact 512 64 1)
done
for r in 1 2; do
    bench_run rule-default $dory models/dory-tiny 0 exact kl:0.05 512 128 3 120
    (export DORY_WGPU_ATTEND_LANES=8; bench_run rule-lanes8 $dory models/dory-tiny 0 exact kl:0.05 512 128 3 120)
done
