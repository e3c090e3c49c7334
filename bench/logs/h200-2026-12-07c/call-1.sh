#!/usr/bin/env bash
# 2026-12-07, twentieth session, call 1. One binary (`bench/wgpu_h200.sh build`; carry .gl
# and .wgpu-carry). The GPU tests under DORY_WGPU_CHECKS=0 DORY_WGPU_SUBGROUP=1; dory-tiny
# under its rule (kl:0.05) with each step recorded to the most passes of the last 16 tokens,
# the step after gated on it (the default), against every pass recorded (DORY_WGPU_GATE=0),
# interleaved three rounds, with the host's profile of each; then the nineteenth session's
# three settings (checked default / unchecked / unchecked + the subgroup a constant),
# interleaved two rounds on the larger config (tg64) and dory-tiny (tg128), and each one's
# rule, depth 4096 and profile. Call 2 (bench/logs/h200-2026-12-07b/call-1.sh's end) has
# issue 9's figures, the attention's knobs and the clocks.
cd "$(dirname "$0")/../../.."  # the repository root
source bench/device_setup.sh
(export DORY_WGPU_CHECKS=0 DORY_WGPU_SUBGROUP=1; call_start)
large=/tmp/wgpu-large  # made by call_start's large_model, in its subshell
tiny=models/dory-tiny
for round in 1 2 3; do
    bench_run rule-gate $dory $tiny 0 exact kl:0.05 512 128 2 120
    (export DORY_WGPU_GATE=0; bench_run rule-all $dory $tiny 0 exact kl:0.05 512 128 2 120)
done
for g in 1 0; do
    echo "== gate $g" >> $OUT/a/host.txt
    DORY_WGPU_GATE=$g DORY_WGPU_PROFILE=host timeout 120 $dory bench --backend wgpu --model $tiny --depth 0 \
        --attention exact --exit kl:0.05 --prompt 16 --gen 128 --reps 1 2>&1 | grep -v XDG_RUNTIME >> $OUT/a/host.txt
done
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
