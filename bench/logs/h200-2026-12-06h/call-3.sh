#!/usr/bin/env bash
# 2026-12-06, seventeenth session, call 3 (not run: the session's device time went to failed
# starts; prepared for the next session's first call): each decode kernel's work, its
# dispatch kept.
# Call 2 left kernels out (DORY_WGPU_SKIP); but wgpu puts a barrier before a dispatch only
# for the buffers it binds whose state must change (one written, or read before and written
# now), so a kernel left out may also take a barrier away between its neighbours. Here each
# kernel is also dispatched with no workgroups (`DORY_WGPU_EMPTY=NAME,…`, indirect from a
# buffer of zeros): its bindings, and so every barrier, stay; and some dispatched twice in a
# row (`DORY_WGPU_TWICE`). .wgpu-carry/dory-8a742be is main's
# engine plus the knobs of branch measure-skip2 (never merged). Built with
# `bench/wgpu_h200.sh build 8a742be`; carry .gl and .wgpu-carry. tg after pp512, exact, depth 0.
cd "$(dirname "$0")/../../.."  # the repository root
source bench/device_setup.sh
[ -n "${large:-}" ] || large_model
m=$(ls .wgpu-carry/dory-* | grep -v kernels | grep -v '\.gz$' | head -1)
run() {  # label model gen [VAR VALUE]
    [ -z "${4:-}" ] || export $4=$5
    bench_tg $1 $m $2 0 exact 512 $3 1
    [ -z "${4:-}" ] || unset $4
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
