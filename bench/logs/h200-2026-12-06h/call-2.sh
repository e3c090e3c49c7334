#!/usr/bin/env bash
# 2026-12-06, seventeenth session: what each decode kernel costs on the chain now, by leaving
# it out (the last such table was 2026-12-04's second session, on kernels since rewritten).
# .wgpu-carry/dory-bb18b2b is main's engine plus two knobs for measuring (branch
# measure-skip2, never merged; the step's outputs are then garbage while its time is real):
# `DORY_WGPU_SKIP=NAME,…` records no dispatch of those kernels; `DORY_WGPU_ATTEND_PROBE=N`
# leaves parts of attend.wgsl out (1 the value sums, 2 the keys' loads, 3 the prologue,
# 4 all after the prologue, 5 everything). Built with `bench/wgpu_h200.sh build bb18b2b`; carry .gl
# and .wgpu-carry. Decode only (tg after a 512-token prompt, as issue 9 measures it; the prompt's kernels have other
# names), all passes, exact, depth 0; baselines (nothing left out) first, between and last.
cd "$(dirname "$0")/../../.."  # the repository root
source bench/device_setup.sh
[ -n "${large:-}" ] || large_model
skip=.wgpu-carry/dory-bb18b2b
out() {  # label model gen kernels
    DORY_WGPU_SKIP=$4 bench_tg "$1" $skip $2 0 exact 512 $3 1
}
out none $large 64 ""
for k in gemv gemv_glu_residual attend gemv_residual combine gemv_edge gemv_scaled residual_mix,enter; do
    out $k $large 64 $k
done
out none $large 64 ""
for n in 1 2 3 4 5; do
    DORY_WGPU_ATTEND_PROBE=$n out probe-$n $large 64 ""
done
out none models/dory-tiny 128 ""
for k in gemv gemv_combine attend gemv_glu_residual gemv_residual combine residual_mix,mix,enter gemv_scaled; do
    out $k models/dory-tiny 128 $k
done
out none models/dory-tiny 128 ""
for n in 1 2 3 4 5; do
    DORY_WGPU_ATTEND_PROBE=$n out probe-$n models/dory-tiny 128 ""
done
# Nothing recorded at all: the host's loop alone.
out all $large 64 gemv,gemv_glu_residual,attend,gemv_residual,combine,gemv_edge,gemv_scaled,residual_mix,enter,embed,mix,copy,gemv_combine
