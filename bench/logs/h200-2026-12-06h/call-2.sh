#!/usr/bin/env bash
# 2026-12-06, seventeenth session: what each decode kernel costs on the chain now, by leaving
# it out (the last such table was 2026-12-04's second session, on kernels since rewritten).
# .wgpu-carry/dory-3962228 is main's engine plus `DORY_WGPU_SKIP=NAME,…` (branch
# measure-skip2, never merged: those kernels are not recorded, so the step's outputs are
# garbage while its time is real). Built with `bench/wgpu_h200.sh build 3962228`; carry .gl
# and .wgpu-carry. Decode only (tg after a 16-token prompt; the prompt's kernels have other
# names), all passes, exact, depth 0; baselines (nothing left out) first, between and last.
cd "$(dirname "$0")/../../.."  # the repository root
source bench/device_setup.sh
[ -n "${large:-}" ] || large_model
skip=.wgpu-carry/dory-3962228
out() {  # label model gen kernels
    DORY_WGPU_SKIP=$4 bench_tg "$1" $skip $2 0 exact 16 $3 1
}
out none $large 64 ""
for k in gemv gemv_glu_residual attend gemv_residual combine gemv_edge gemv_scaled residual_mix,enter; do
    out $k $large 64 $k
done
out none $large 64 ""
out none models/dory-tiny 256 ""
for k in gemv gemv_combine attend gemv_glu_residual gemv_residual combine residual_mix,mix,enter gemv_scaled; do
    out $k models/dory-tiny 256 $k
done
out none models/dory-tiny 256 ""
# Nothing recorded at all: the host's loop alone.
out all $large 64 gemv,gemv_glu_residual,attend,gemv_residual,combine,gemv_edge,gemv_scaled,residual_mix,enter,embed,mix,copy,gemv_combine
