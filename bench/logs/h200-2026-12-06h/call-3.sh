#!/usr/bin/env bash
# 2026-12-06, seventeenth session, call 3 (not run: the session's device time went to failed
# starts; prepared for the next session's first call): each decode kernel's work, its
# dispatch kept.
# Call 2 left kernels out (DORY_WGPU_SKIP); but wgpu puts a barrier before a dispatch only
# for the buffers it binds whose state must change (one written, or read before and written
# now), so a kernel left out may also take a barrier away between its neighbours. Here each
# kernel is also dispatched with no workgroups (`DORY_WGPU_EMPTY=NAME,…`, indirect from a
# buffer of zeros): its bindings, and so every barrier, stay; and some dispatched twice in a
# row (`DORY_WGPU_TWICE`). .wgpu-carry/dory-d078ca0 is main's
# engine plus the knobs of branch measure-skip2 (never merged). Last, dory-tiny under its
# rule with main's binary (its host's recording lighter, e3c4334) beside the session's start
# (9d4cdaa), interleaved: the rule is bound by the host on the H100 machines. Built with
# `bench/wgpu_h200.sh build d078ca0`, then `bench/wgpu_h200.sh build 9d4cdaa` (each also builds
# main's); carry .gl and .wgpu-carry. tg after pp512, exact, depth 0.
cd "$(dirname "$0")/../../.."  # the repository root
source bench/device_setup.sh
[ -n "${large:-}" ] || large_model
m=.wgpu-carry/dory-d078ca0
run() {  # label model gen [VAR VALUE]
    bench_knob "$1" $m "$2" "$3" "${4:-}" "${5:-}"
}
# Per model, the baseline first, between and last (~3 minutes of runs).
run none $large 64
for k in attend combine gemv gemv_residual gemv_glu_residual; do
    run empty-$k $large 64 DORY_WGPU_EMPTY $k
    run twice-$k $large 64 DORY_WGPU_TWICE $k
    [ $k = combine ] && run none $large 64
done
run skip-combine $large 64 DORY_WGPU_SKIP combine
run none $large 64
run none models/dory-tiny 128
for k in attend gemv_combine gemv_glu_residual; do
    run empty-$k models/dory-tiny 128 DORY_WGPU_EMPTY $k
    run twice-$k models/dory-tiny 128 DORY_WGPU_TWICE $k
done
run none models/dory-tiny 128
for r in 1 2 3; do
    bench_run rule-main $dory models/dory-tiny 0 exact kl:0.05 512 128 1 120
    bench_run rule-9d4cdaa .wgpu-carry/dory-9d4cdaa models/dory-tiny 0 exact kl:0.05 512 128 1 120
done
