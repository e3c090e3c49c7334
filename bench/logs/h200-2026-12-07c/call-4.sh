#!/usr/bin/env bash
# 2026-12-07, twentieth session, call 4: main's new defaults (b725e8f: the shaders without
# wgpu's runtime checks, the subgroup size a constant, the gate) from one build. The GPU
# tests, issue 9's figures, then the old builds (DORY_WGPU_CHECKS=1 DORY_WGPU_SUBGROUP=0)
# against the defaults, and the gate against every pass recorded, interleaved two rounds.
cd "$(dirname "$0")/../../.."  # the repository root
source bench/device_setup.sh
call_start
large=/tmp/wgpu-large
tiny=models/dory-tiny
figures
for round in 1 2; do
    for m in "$large 64" "$tiny 128"; do
        bench_knob default $dory $m
        (export DORY_WGPU_CHECKS=1 DORY_WGPU_SUBGROUP=0; bench_knob old $dory $m)
    done
    bench_run rule-gate $dory $tiny 0 exact kl:0.05 512 128 2 120
    (export DORY_WGPU_GATE=0; bench_run rule-all $dory $tiny 0 exact kl:0.05 512 128 2 120)
done
