#!/usr/bin/env bash
# Device call of 2026-12-04, fourth session: for the next session's plan, what each of
# dory-tiny's decode kernels costs on its token's chain (each left out in turn by the
# measure-skip branch's binary, ea1990e: DORY_WGPU_SKIP=NAME records no dispatch of it; its
# decode kernels are this commit's), and the host's time by phase in decode of both models.
cd "$(dirname "$0")/../../.."  # the repository root
o=$OUT
mkdir -p $o/a $o/b
x=bin:.wgpu-carry/dory-ea1990e,DORY_WGPU_SKIP
OUT=$o/a BUDGET=300 SWEEP_DEPTHS="0" SWEEP_ARGS="--attention exact" \
    SWEEP="defaults $x=attend $x=gemv $x=gemv_glu_residual $x=gemv_combine $x=gemv_residual $x=residual_mix,mix,embed $x=gemv_scaled defaults" \
    bash bench/wgpu_h200.sh run sweep
OUT=$o/b BUDGET=150 bash bench/wgpu_h200.sh run host
